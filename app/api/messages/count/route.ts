import { json, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { countMessages } from '@/lib/server/messages/count-messages'
import { countMessagesQuerySchema } from '@/lib/shared/schemas/message'

export const dynamic = 'force-dynamic'

// GET /api/messages/count – how many messages match the list's filters: exact up to 10,000, else a labelled estimate
export const GET = route(async (request) => json(await countMessages(countMessagesQuerySchema.parse(searchParamsOf(request)))))
