import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createReplay } from '@/lib/server/replay/create-replay'
import { listReplays } from '@/lib/server/replay/list-replays'
import { createReplaySchema, listReplaysQuerySchema } from '@/lib/shared/schemas/replay'

export const dynamic = 'force-dynamic'

// GET /api/replays – replay and release jobs with progress, newest first
export const GET = route({ permission: 'messages:read' }, async ({ db, query, sourceIds }) =>
  json(await listReplays({ db, query: listReplaysQuerySchema.parse(query), sourceIds: await sourceIds() })),
)

// POST /api/replays – plan (dryRun) or create a replay job
export const POST = route({ permission: 'messages:replay' }, async ({ request, db, root, actor, sourceIds }) => {
  const result = await createReplay({ db, control: root.control, replayWork: root.replayWork, input: await readJson(request, createReplaySchema), actor, sourceIds: await sourceIds() })
  return 'id' in result ? json(result, { status: 201 }) : json(result)
})
