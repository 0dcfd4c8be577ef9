import { json, route } from '@/lib/server/platform/http/handle-route'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { sampleBodyFields } from '@/lib/server/messages/sample-body-fields'
import { bodyFieldsQuerySchema } from '@/lib/shared/schemas/body-fields'

export const dynamic = 'force-dynamic'

// GET /api/messages/body-fields – the JSON Pointers seen in recent JSON bodies (of a group or source), for `b.` filters
export const GET = route({ permission: 'messages:read' }, async ({ db, query, sourceIds }) => {
  const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
  return json(await sampleBodyFields({ db, query: bodyFieldsQuerySchema.parse(query), sourceIds: await sourceIds(), view }))
})
