import { getGroup } from '@/lib/server/groups/get-group'
import { json, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { groupDetailQuerySchema } from '@/lib/shared/schemas/group'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}?range=24h|7d|30d – one group with its arrivals over the range and a breakdown of its messages
export const GET = route<{ id: string }>(async (request, { id }) =>
  json(await getGroup({ id, ...groupDetailQuerySchema.parse(searchParamsOf(request)) })),
)
