import { json, route } from '@/lib/server/platform/http/handle-route'
import { getSummary } from '@/lib/server/summary/get-summary'

export const dynamic = 'force-dynamic'

// GET /api/summary – stored and hourly arrival totals, group count, per-source depth and drained counts, drainer state
export const GET = route({ permission: 'messages:read' }, async ({ db, root, sourceIds }) => json(await getSummary({ db, engines: root.engines, sourceIds: await sourceIds() })))
