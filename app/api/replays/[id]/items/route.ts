import { json, route } from '@/lib/server/platform/http/handle-route'
import { listReplayItems } from '@/lib/server/replay/list-replay-items'
import { listReplayItemsQuerySchema } from '@/lib/shared/schemas/replay'

export const dynamic = 'force-dynamic'

type Params = { id: string }

// GET /api/replays/{id}/items – each message's outcome, in publish order
export const GET = route<Params>({ permission: 'messages:read' }, async ({ db, query, sourceIds, params: { id } }) =>
  json(await listReplayItems({ db, id, query: listReplayItemsQuerySchema.parse(query), sourceIds: await sourceIds() })),
)
