import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { rejectReplay } from '@/lib/server/replay/reject-replay'
import { replayDecisionSchema } from '@/lib/shared/schemas/replay-approval'

type Params = { id: string }

// POST /api/replays/{id}/reject – {comment}; a second operator rejects a waiting replay: nothing is published
export const POST = route<Params>({ permission: 'replays:approve' }, async ({ request, db, actor, sourceIds, signedIn, params: { id } }) => {
  const input = await readJson(request, replayDecisionSchema)
  return json(await rejectReplay({ db, id, input, decider: { actor, kind: signedIn().kind, sourceIds: await sourceIds() } }))
})
