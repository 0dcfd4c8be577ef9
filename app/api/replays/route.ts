import { actorOf } from '@/lib/server/http/actor'
import { json, readJson, route, searchParamsOf } from '@/lib/server/http/handle-route'
import { createReplay } from '@/lib/server/replay/create-replay'
import { listReplays } from '@/lib/server/replay/list-replays'
import { createReplaySchema, listReplaysQuerySchema } from '@/lib/shared/schemas/replay'

export const dynamic = 'force-dynamic'

// GET /api/replays – replay and release jobs with progress, newest first
export const GET = route(async (request) => json(await listReplays(listReplaysQuerySchema.parse(searchParamsOf(request)))))

// POST /api/replays – plan (dryRun) or create a replay job
export const POST = route(async (request) => {
  const result = await createReplay({ input: await readJson(request, createReplaySchema), actor: actorOf(request) })
  return 'id' in result ? json(result, { status: 201 }) : json(result)
})
