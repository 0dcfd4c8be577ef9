import { hasPermission } from '@/lib/server/auth/principal'
import { json, route } from '@/lib/server/platform/http/handle-route'
import { listAlerts } from '@/lib/server/alerts/list-alerts'

export const dynamic = 'force-dynamic'

// GET /api/alerts – what is firing now, the rules and the webhooks
export const GET = route({ permission: 'alerts:read' }, async ({ db, principal }) => json(await listAlerts({ db, includeDeliveryErrors: hasPermission(principal, 'admin') })))
