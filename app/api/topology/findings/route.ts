import { json, route } from '@/lib/server/platform/http/handle-route'
import { listFindings } from '@/lib/server/topology/list-findings'
import { findingsQuerySchema } from '@/lib/shared/schemas/topology'

export const dynamic = 'force-dynamic'

// GET /api/topology/findings?vhost=&broker=jetstream&state=open|all – the doctor's findings, worst and newest first
export const GET = route({ permission: 'topology:read' }, async ({ db, query }) => json(await listFindings({ db, ...findingsQuerySchema.parse(query) })))
