import { json, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { listAudit } from '@/lib/server/audit/list-audit'
import { listAuditQuerySchema } from '@/lib/shared/schemas/audit'

export const dynamic = 'force-dynamic'

// GET /api/audit – replays, resolves, pauses and resumes: who, when, what, outcome; newest first
export const GET = route(async (request) => json(await listAudit(listAuditQuerySchema.parse(searchParamsOf(request)))))
