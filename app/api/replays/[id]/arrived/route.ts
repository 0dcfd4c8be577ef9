import { json, route } from '@/lib/server/platform/http/handle-route'
import { countReplayArrived } from '@/lib/server/replay/replay-arrived'

type Params = { id: string }

// GET /api/replays/{id}/arrived – messages of the job's group or filter that arrived after it was planned
export const GET = route<Params>({ permission: 'messages:read' }, async ({ db, sourceIds, params: { id } }) => json(await countReplayArrived({ db, id, sourceIds: await sourceIds() })))
