import { json, route } from '@/lib/server/platform/http/handle-route'
import { cancelReplay } from '@/lib/server/replay/cancel-replay'

type Params = { id: string }

// POST /api/replays/{id}/cancel – stop publishing; unpublished messages stay dead
export const POST = route<Params>({ permission: 'messages:replay' }, async ({ db, root, actor, sourceIds, params: { id } }) => json(await cancelReplay({ db, replayWork: root.replayWork, id, actor, sourceIds: await sourceIds() })))
