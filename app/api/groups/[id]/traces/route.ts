import { json, route } from '@/lib/server/platform/http/handle-route'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { listGroupTraces } from '@/lib/server/messages/list-group-traces'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}/traces – the group's most recent distinct traces, each with its newest message and trace link
export const GET = route<{ id: string }>({ permission: 'messages:read' }, async ({ db, sourceIds, params: { id } }) => {
  const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
  return json(await listGroupTraces({ db, id, view, sourceIds: await sourceIds() }))
})
