import { json, route } from '@/lib/server/platform/http/handle-route'
import { listReplayEdits } from '@/lib/server/messages/list-replay-edits'

export const dynamic = 'force-dynamic'

type Params = { id: string }

// GET /api/replays/{id}/edits – the edited messages the job sends, each frozen revision's diff against the original
// (operators: diffs show raw bodies, as GET /api/messages/{id}/revisions)
export const GET = route<Params>({ permission: 'messages:raw' }, async ({ db, sourceIds, params: { id } }) => json(await listReplayEdits({ db, id, sourceIds: await sourceIds() })))
