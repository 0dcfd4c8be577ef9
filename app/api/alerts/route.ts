import { json, route } from '@/lib/server/http/handle-route'
import { listAlerts } from '@/lib/server/alerts/list-alerts'

export const dynamic = 'force-dynamic'

// GET /api/alerts – what is firing now, the rules and the webhooks
export const GET = route(async () => json(await listAlerts()))
