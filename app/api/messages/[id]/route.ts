import { json, route } from '@/lib/server/platform/http/handle-route'
import { getMessage } from '@/lib/server/messages/get-message'
import { recordRawView } from '@/lib/server/messages/record-raw-view'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'

export const dynamic = 'force-dynamic'

// GET /api/messages/{id} – everything stored and derived for one dead letter: raw for operators (audited), redacted for viewers
export const GET = route<{ id: string }>({ permission: 'messages:read' }, async ({ db, actor, sourceIds, params: { id } }) => {
  const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
  const message = await getMessage({ db, id, sourceIds: await sourceIds(), view })
  if (!message.redacted) await recordRawView({ db, actor, messageId: message.id, what: 'detail' })
  return json(message)
})
