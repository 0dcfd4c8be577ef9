import { json, route } from '@/lib/server/platform/http/handle-route'
import { listMessages } from '@/lib/server/messages/list-messages'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'

export const dynamic = 'force-dynamic'

// GET /api/messages – stored dead letters, newest failure first, filtered and keyset-paginated
export const GET = route({ permission: 'messages:read' }, async ({ db, query, sourceIds }) => {
  const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
  return json(await listMessages({ db, query: listMessagesQuerySchema.parse(query), sourceIds: await sourceIds(), view }))
})
