import { json, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { listMessages } from '@/lib/server/messages/list-messages'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'

export const dynamic = 'force-dynamic'

// GET /api/messages – stored dead letters, newest failure first, filtered and keyset-paginated
export const GET = route(async (request) => json(await listMessages(listMessagesQuerySchema.parse(searchParamsOf(request)))))
