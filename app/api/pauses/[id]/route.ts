import { json, route } from '@/lib/server/platform/http/handle-route'
import { resumePause } from '@/lib/server/pauses/resume-pause'

type Params = { id: string }

// DELETE /api/pauses/{id} – resume: held messages are released in arrival order, then guards stop holding
export const DELETE = route<Params>({ permission: 'pauses:write' }, async ({ db, root, actor, sourceIds, params: { id } }) => json(await resumePause({ db, control: root.control, id, actor, sourceIds: await sourceIds() })))
