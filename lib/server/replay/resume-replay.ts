import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import type { Signal } from '@/lib/server/platform/signal'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { selectJob } from './replay-store'
import { lockJobForResume, resumeHaltedJob } from './stage-store'
import { toReplayJobDto } from './to-replay-dto'

/** `replayWork`: wakes this process's replay executor (the composition root's). */
export type ResumeReplayOptions = { db: Db; replayWork: Signal; id: string; actor: string } & SourceScope

/**
 * POST /api/replays/{id}/resume: a halted job goes on where it stopped (the rest of its stage, or the next stage once
 * the window has passed). The re-failures that halted it no longer count; new ones do. 409 unless the job is halted.
 */
export async function resumeReplay({ db, replayWork, id, actor, ...scope }: ResumeReplayOptions): Promise<ReplayJobDto> {
  const jobId = parseId(id, 'replay').toString()
  await db.sql.transaction(async (tx) => {
    const job = await lockJobForResume({ sql: tx, jobId, sourceIds: allowedSourceIds(scope) })
    if (!job) throw notFound(`replay ${id}`)
    // The state machine refuses a job that is not halted (lib/shared/replay-job-machine.ts).
    if (!(await resumeHaltedJob({ sql: tx, jobId, actor }))) {
      throw new AppError('conflict', `replay ${id} is ${job.status}, not halted: only a halted replay can be resumed`)
    }
    await recordAudit({
      sql: tx,
      actor,
      action: 'replay.resumed',
      subject: { type: 'replay', id: jobId },
      summary: `Replay ${jobId} resumed after its halt in ${job.stage === 0 ? 'the canary' : `stage ${job.stage + 1}`}`,
      details: { stage: job.stage, haltedAt: job.halted_at ? new Date(job.halted_at).toISOString() : null },
      outcome: 'resumed',
    })
  })
  replayWork.notify()
  return toReplayJobDto((await selectJob({ sql: db.sql, id: jobId }))!)
}
