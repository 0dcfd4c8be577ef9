import { actorOf } from '@/lib/server/http/actor'
import { json, readJson, route } from '@/lib/server/http/handle-route'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { resolveSchema } from '@/lib/shared/schemas/replay'

// POST /api/messages/resolve – mark a selection or a group resolved, with a reason, without replaying
export const POST = route(async (request) => json(await resolveMessages({ input: await readJson(request, resolveSchema), actor: actorOf(request) })))
