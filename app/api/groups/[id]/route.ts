import { getGroup } from '@/lib/server/groups/get-group'
import { updateGroup } from '@/lib/server/groups/update-group'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { groupDetailQuerySchema, updateGroupSchema } from '@/lib/shared/schemas/group'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}?range=24h|7d|30d – one group with its arrivals over the range and a breakdown of its messages
export const GET = route<{ id: string }>({ permission: 'messages:read' }, async ({ db, query, sourceIds, params: { id } }) =>
  json(await getGroup({ db, id, ...groupDetailQuerySchema.parse(query), sourceIds: await sourceIds() })),
)

// PATCH /api/groups/{id} – triage state: {status?, note?, ticketUrl?}
export const PATCH = route<{ id: string }>({ permission: 'groups:triage' }, async ({ request, db, actor, sourceIds, params: { id } }) =>
  json(await updateGroup({ db, id, input: await readJson(request, updateGroupSchema), actor, sourceIds: await sourceIds() })),
)
