import { actorOf } from '@/lib/server/http/actor'
import { json, readJson, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { createPause } from '@/lib/server/pauses/create-pause'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { createPauseSchema, listPausesQuerySchema } from '@/lib/shared/schemas/pause'

export const dynamic = 'force-dynamic'

// GET /api/pauses – the pause registry with its version (guards poll it); ?status=all includes resumed pauses
export const GET = route(async (request) => json(await listPauses(listPausesQuerySchema.parse(searchParamsOf(request)))))

// POST /api/pauses – pause one entity (entityKey) or the whole queue (entityKey null) of a source's consumer queue
export const POST = route(async (request) =>
  json(await createPause({ input: await readJson(request, createPauseSchema), actor: actorOf(request) }), { status: 201 }),
)
