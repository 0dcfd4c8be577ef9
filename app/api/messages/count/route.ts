import { json, route } from '@/lib/server/platform/http/handle-route'
import { countMessages } from '@/lib/server/messages/count-messages'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { countMessagesQuerySchema } from '@/lib/shared/schemas/message'

export const dynamic = 'force-dynamic'

// GET /api/messages/count – how many messages match the list's filters: exact up to 10,000, else a labelled estimate
export const GET = route({ permission: 'messages:read' }, async ({ db, query, sourceIds }) => {
  const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
  return json(await countMessages({ db, filter: countMessagesQuerySchema.parse(query), sourceIds: await sourceIds(), view }))
})
