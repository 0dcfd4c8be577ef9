import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDto } from '@/lib/shared/schemas/replay'
import type { ReplayDecisionInput } from '@/lib/shared/schemas/replay-approval'
import { approveJob } from './approval-store'
import { lockForDecision, type Decider } from './replay-decision'
import { selectJob } from './replay-store'
import { signalReplayWork } from './replay-signal'
import { toReplayJobDto } from './to-replay-dto'

export type ApproveReplayOptions = { db: Db; id: string; input: ReplayDecisionInput; decider: Decider }

/**
 * POST /api/replays/{id}/approve: a second operator approves a job awaiting approval, with a comment. It becomes
 * scheduled, for its start time or for now; the executor starts it (re-checking its plan) at its next look.
 */
export async function approveReplay({ db, id, input, decider }: ApproveReplayOptions): Promise<ReplayJobDto> {
  const jobId = parseId(id, 'replay').toString()
  await db.sql.transaction(async (tx) => {
    const job = await lockForDecision({ sql: tx, id: jobId, decider, verb: 'approve' })
    const startAt = await approveJob({ sql: tx, jobId, actor: decider.actor, comment: input.comment })
    const later = startAt.getTime() > Date.now() + 1000
    await recordAudit({
      sql: tx,
      actor: decider.actor,
      action: 'replay.approved',
      subject: { type: 'replay', id: jobId },
      summary: `Replay ${jobId} of ${job.total} messages (requested by ${job.created_by}) approved${later ? `, to start at ${startAt.toISOString()}` : ''}: ${input.comment}`,
      details: { comment: input.comment, requestedBy: job.created_by, startAt: startAt.toISOString() },
      outcome: 'scheduled',
    })
  })
  signalReplayWork()
  return toReplayJobDto((await selectJob({ sql: db.sql, id: jobId }))!)
}
