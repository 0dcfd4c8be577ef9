import { hasPermission } from '@/lib/server/auth/principal'
import { json, route } from '@/lib/server/platform/http/handle-route'
import { listAlertEvents } from '@/lib/server/alerts/list-alert-events'
import { listAlertEventsQuerySchema } from '@/lib/shared/schemas/alert'

export const dynamic = 'force-dynamic'

// GET /api/alerts/events?cursor&limit – the alert history, newest first
export const GET = route({ permission: 'alerts:read' }, async ({ db, query, principal }) =>
  json(await listAlertEvents({ db, query: listAlertEventsQuerySchema.parse(query), includeDeliveryErrors: hasPermission(principal, 'admin') })),
)
