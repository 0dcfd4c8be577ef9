import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { approveReplay } from '@/lib/server/replay/approve-replay'
import { replayDecisionSchema } from '@/lib/shared/schemas/replay-approval'

type Params = { id: string }

// POST /api/replays/{id}/approve – {comment}; a second operator (not the requester, not a token) approves a waiting replay
export const POST = route<Params>({ permission: 'replays:approve' }, async ({ request, db, root, actor, sourceIds, signedIn, params: { id } }) => {
  const input = await readJson(request, replayDecisionSchema)
  return json(await approveReplay({ db, replayWork: root.replayWork, id, input, decider: { actor, kind: signedIn().kind, sourceIds: await sourceIds() } }))
})
