import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import type { Signal } from '@/lib/server/platform/signal'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { ReplayJobDto } from '@/lib/shared/schemas/replay'
import { closeOpenItems, finishJob } from './replay-store'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { lockJobForCancel, requestCancel, selectJob } from './replay-store'
import { toReplayJobDto } from './to-replay-dto'
import { endHalt } from './stage-store'
import { endWaitingJob } from './approval-store'
import { canHappen } from '@/lib/shared/replay-job-machine'

const alreadyEnded = (id: string, status: string) => new AppError('conflict', `replay ${id} has already ${status === 'failed' ? 'failed' : `been ${status}`}`)

/** `replayWork`: wakes this process's replay executor (the composition root's). */
export type CancelReplayOptions = { db: Db; replayWork: Signal; id: string; actor: string } & SourceScope

/**
 * POST /api/replays/{id}/cancel. The executor running the job sees the request within its heartbeat (200 ms) and stops
 * publishing; the messages not yet published go back to dead ("replay cancelled"), the entities' held messages are
 * still released and the pauses resumed. A job no executor has started yet (and that paused nothing) ends at once. A
 * halted job is handed back to the executor, which does the same.
 */
export async function cancelReplay({ db, replayWork, id, actor, ...scope }: CancelReplayOptions): Promise<ReplayJobDto> {
  const jobId = parseId(id, 'replay').toString()
  const sourceIds = allowedSourceIds(scope)
  await db.sql.transaction(async (tx) => {
    const job = await lockJobForCancel({ sql: tx, id: jobId, sourceIds })
    if (!job) throw notFound(`replay ${id}`)
    if (canHappen('cancel', job.status)) {
      // Never started: nothing was marked, paused or published (docs/ARCHITECTURE.md#job-lifecycle).
      await endWaitingJob({ sql: tx, jobId, event: 'cancel', reason: 'replay cancelled before it started' })
      await recordAudit({ sql: tx, actor, action: 'replay.cancelled', subject: { type: 'replay', id: jobId }, summary: `Replay ${jobId} cancelled before it started (${job.status.replace('_', ' ')}): all ${job.total} messages stay dead`, details: { statusBefore: job.status }, outcome: 'cancelled' })
      return
    }
    if (!canHappen('request-cancel', job.status)) throw alreadyEnded(id, job.status)
    if (job.kind === 'release') throw new AppError('conflict', `release ${id} cannot be cancelled: it sends held messages back so their pause can end`)
    if (job.cancel_requested_at !== null) return
    if (!(await requestCancel({ sql: tx, id: jobId, actor }))) throw alreadyEnded(id, job.status)
    if (job.status === 'halted') await endHalt({ sql: tx, jobId, actor, outcome: 'cancelled' })
    let outcome = 'requested'
    if (job.status === 'pending' && job.unleased && job.pauses === 0) {
      await closeOpenItems({ sql: tx, jobId, actor, status: 'cancelled', reason: 'replay cancelled', kinds: ['replay', 'release'] })
      // Refused only if the job moved despite the lock: throwing rolls back the items closed above with it.
      if (!(await finishJob({ sql: tx, jobId, owner: null, status: 'cancelled' }))) throw alreadyEnded(id, job.status)
      outcome = 'cancelled'
    }
    await recordAudit({
      sql: tx,
      actor,
      action: 'replay.cancelled',
      subject: { type: 'replay', id: jobId },
      summary: `Cancel of replay ${jobId} ${outcome === 'cancelled' ? '(not started: all ' + job.total + ' messages stay dead)' : 'requested'}`,
      details: { statusBefore: job.status },
      outcome,
    })
  })
  replayWork.notify()
  return toReplayJobDto((await selectJob({ sql: db.sql, id: jobId }))!)
}
