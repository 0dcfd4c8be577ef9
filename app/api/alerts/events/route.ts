import { json, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { listAlertEvents } from '@/lib/server/alerts/list-alert-events'
import { listAlertEventsQuerySchema } from '@/lib/shared/schemas/alert'

export const dynamic = 'force-dynamic'

// GET /api/alerts/events?cursor&limit – the alert history, newest first
export const GET = route(async (request) => json(await listAlertEvents(listAlertEventsQuerySchema.parse(searchParamsOf(request)))))
