import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { Signal } from '@/lib/server/platform/signal'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDto } from '@/lib/shared/schemas/replay'
import type { ReplayDecisionInput } from '@/lib/shared/schemas/replay-approval'
import { approveJob } from './approval-store'
import { lockForDecision, type Decider } from './replay-decision'
import { selectJob } from './replay-store'
import { toReplayJobDto } from './to-replay-dto'

/** `replayWork`: wakes this process's replay executor (the composition root's). */
export type ApproveReplayOptions = { db: Db; replayWork: Signal; id: string; input: ReplayDecisionInput; decider: Decider }

/**
 * POST /api/replays/{id}/approve: a second operator approves a job awaiting approval, with a comment. It becomes
 * scheduled, for its start time or for now; the executor starts it (re-checking its plan) at its next look.
 */
export async function approveReplay({ db, replayWork, id, input, decider }: ApproveReplayOptions): Promise<ReplayJobDto> {
  const jobId = parseId(id, 'replay').toString()
  await db.sql.transaction(async (tx) => {
    const job = await lockForDecision({ sql: tx, id: jobId, decider, verb: 'approve' })
    const startAt = await approveJob({ sql: tx, jobId, actor: decider.actor, comment: input.comment })
    // The job is locked and was awaiting approval: a refusal here means the state machine and lockForDecision disagree.
    if (!startAt) throw new AppError('conflict', `Replay ${id} is no longer awaiting approval`)
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
  replayWork.notify()
  return toReplayJobDto((await selectJob({ sql: db.sql, id: jobId }))!)
}
