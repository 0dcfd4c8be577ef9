import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDto } from '@/lib/shared/schemas/replay'
import type { ReplayDecisionInput } from '@/lib/shared/schemas/replay-approval'
import { endWaitingJob } from './approval-store'
import { lockForDecision, type Decider } from './replay-decision'
import { selectJob } from './replay-store'
import { toReplayJobDto } from './to-replay-dto'

export type RejectReplayOptions = { db: Db; id: string; input: ReplayDecisionInput; decider: Decider }

/**
 * POST /api/replays/{id}/reject: a second operator rejects a job awaiting approval, with a comment. Nothing was
 * published, marked or paused: its items are cancelled and its messages simply stay dead.
 */
export async function rejectReplay({ db, id, input, decider }: RejectReplayOptions): Promise<ReplayJobDto> {
  const jobId = parseId(id, 'replay').toString()
  await db.sql.transaction(async (tx) => {
    const job = await lockForDecision({ sql: tx, id: jobId, decider, verb: 'reject' })
    await endWaitingJob({ sql: tx, jobId, event: 'reject', reason: `replay rejected by ${decider.actor}`, actor: decider.actor, comment: input.comment })
    await recordAudit({
      sql: tx,
      actor: decider.actor,
      action: 'replay.rejected',
      subject: { type: 'replay', id: jobId },
      summary: `Replay ${jobId} of ${job.total} messages (requested by ${job.created_by}) rejected: ${input.comment}`,
      details: { comment: input.comment, requestedBy: job.created_by },
      outcome: 'rejected',
    })
  })
  return toReplayJobDto((await selectJob({ sql: db.sql, id: jobId }))!)
}
