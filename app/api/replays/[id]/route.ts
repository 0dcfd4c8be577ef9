import { json, route } from '@/lib/server/platform/http/handle-route'
import { getReplay } from '@/lib/server/replay/get-replay'

export const dynamic = 'force-dynamic'

type Params = { id: string }

// GET /api/replays/{id} – one job with its progress, frozen plan and pauses
export const GET = route<Params>({ permission: 'messages:read' }, async ({ db, sourceIds, params: { id } }) => json(await getReplay({ db, id, sourceIds: await sourceIds() })))
