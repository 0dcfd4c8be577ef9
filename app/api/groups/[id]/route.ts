import { getGroup } from '@/lib/server/groups/get-group'
import { updateGroup } from '@/lib/server/groups/update-group'
import { actorOf } from '@/lib/server/http/actor'
import { json, readJson, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { groupDetailQuerySchema, updateGroupSchema } from '@/lib/shared/schemas/group'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}?range=24h|7d|30d – one group with its arrivals over the range and a breakdown of its messages
export const GET = route<{ id: string }>(async (request, { id }) =>
  json(await getGroup({ id, ...groupDetailQuerySchema.parse(searchParamsOf(request)) })),
)

// PATCH /api/groups/{id} – triage state: {status?, note?, ticketUrl?}
export const PATCH = route<{ id: string }>(async (request, { id }) =>
  json(await updateGroup({ id, input: await readJson(request, updateGroupSchema), actor: actorOf(request) })),
)
