import { actorOf } from '@/lib/server/http/actor'
import { json, route } from '@/lib/server/http/handle-route'
import { cancelReplay } from '@/lib/server/replay/cancel-replay'

type Params = { id: string }

// POST /api/replays/{id}/cancel – stop publishing; unpublished messages stay dead
export const POST = route<Params>(async (request, { id }) => json(await cancelReplay({ id, actor: actorOf(request) })))
