import { json, route } from '@/lib/server/platform/http/handle-route'
import { listAudit } from '@/lib/server/audit/list-audit'
import { listAuditQuerySchema } from '@/lib/shared/schemas/audit'

export const dynamic = 'force-dynamic'

// GET /api/audit – replays, resolves, pauses and resumes: who, when, what, outcome; newest first
export const GET = route({ permission: 'audit:read' }, async ({ db, query }) => json(await listAudit({ db, query: listAuditQuerySchema.parse(query) })))
