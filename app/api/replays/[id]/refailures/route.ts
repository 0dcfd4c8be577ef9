import { json, route } from '@/lib/server/platform/http/handle-route'
import { getReplayRefailures } from '@/lib/server/replay/get-replay-refailures'

export const dynamic = 'force-dynamic'

type Params = { id: string }

// GET /api/replays/{id}/refailures – replayed copies that dead-lettered again, by group, stage and canary message
export const GET = route<Params>({ permission: 'messages:read' }, async ({ db, sourceIds, params: { id } }) => json(await getReplayRefailures({ db, id, sourceIds: await sourceIds() })))
