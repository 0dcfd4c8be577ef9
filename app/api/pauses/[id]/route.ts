import { actorOf } from '@/lib/server/http/actor'
import { json, route } from '@/lib/server/http/handle-route'
import { resumePause } from '@/lib/server/pauses/resume-pause'

type Params = { id: string }

// DELETE /api/pauses/{id} – resume: held messages are released in arrival order, then guards stop holding
export const DELETE = route<Params>(async (request, { id }) => json(await resumePause({ id, actor: actorOf(request) })))
