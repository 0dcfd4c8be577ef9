import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { ReplayEditsDto } from '@/lib/shared/schemas/replay'
import { jobVisible } from '@/lib/server/replay/replay-store'
import { describeDiff, diffContent } from './revision-content'
import { selectFrozenRevisions } from './revisions-store'

/** The job page shows this many edited messages with their diffs, then a count. */
export const REPLAY_EDITS_SHOWN = 20

export type ListReplayEditsOptions = { db: Db; id: string } & SourceScope

/**
 * GET /api/replays/{id}/edits: "a pending job shows the diff of any edits" (issue 18). The edited messages the job
 * sends are its items with a frozen revision (frozen when the job was created, also for a job that waits: later edits
 * go out with the next replay, docs/ARCHITECTURE.md#revisions); each is diffed against the stored original, not
 * against the revision before it, so the approver sees everything that differs from what failed.
 */
export async function listReplayEdits({ db: { sql }, id, ...scope }: ListReplayEditsOptions): Promise<ReplayEditsDto> {
  const jobId = parseId(id, 'replay').toString()
  const sourceIds = allowedSourceIds(scope)
  if (!(await jobVisible({ sql, id: jobId, sourceIds }))) throw notFound(`replay ${id}`)
  const { total, rows } = await selectFrozenRevisions({ sql, jobId, sourceIds, limit: REPLAY_EDITS_SHOWN })
  return {
    total,
    limit: REPLAY_EDITS_SHOWN,
    edits: rows.map((row) => {
      const diff = diffContent(row.original, row.edited)
      return {
        messageId: row.dead_letter_id,
        itemId: String(row.seq),
        itemStatus: row.item_status,
        revision: row.revision,
        editedBy: row.created_by,
        editedAt: row.created_at.toISOString(),
        summary: describeDiff(diff),
        diff,
      }
    }),
  }
}
