import { listGroups } from '@/lib/server/groups/list-groups'
import { json, route } from '@/lib/server/platform/http/handle-route'
import { listGroupsQuerySchema } from '@/lib/shared/schemas/group'

export const dynamic = 'force-dynamic'

// GET /api/groups – error groups with counts, rates, 24-hour sparklines, first/last seen and facets
export const GET = route({ permission: 'messages:read' }, async ({ db, query, sourceIds }) =>
  json(await listGroups({ db, query: listGroupsQuerySchema.parse(query), sourceIds: await sourceIds() })),
)
