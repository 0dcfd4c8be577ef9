import { json, route } from '@/lib/server/platform/http/handle-route'
import { resumeReplay } from '@/lib/server/replay/resume-replay'

type Params = { id: string }

// POST /api/replays/{id}/resume – a halted staged replay goes on publishing
export const POST = route<Params>({ permission: 'messages:replay' }, async ({ db, root, actor, sourceIds, params: { id } }) => json(await resumeReplay({ db, replayWork: root.replayWork, id, actor, sourceIds: await sourceIds() })))
