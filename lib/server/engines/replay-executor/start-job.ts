import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { Logger } from '@/lib/server/platform/log'
import { createJobPauses, publishControlEvents, toControlEvents } from '@/lib/server/pauses/job-pauses'
import { endWaitingJob, lockExpiredJobs } from '@/lib/server/replay/approval-store'
import { describeTargets } from '@/lib/server/replay/plan-replay'
import { getReplayApprovalSettings } from '@/lib/server/replay/replay-approval-settings'
import { resolveSuperseded } from '@/lib/server/replay/resolve-superseded'
import type { ReplaySettings } from '@/lib/server/replay/replay-settings'
import { selectJobEntities } from '@/lib/server/replay/replay-store'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import type { ReplayPlanDto, ReplayPlanTargetDto } from '@/lib/shared/schemas/replay'
import { lockDueJob, markJobStarted, sendBackForApproval, stillDeadRoutes, takeItemsMessages, type DueJob } from './start-store'

/**
 * Starting a job that waited (scheduled, or approved): docs/ARCHITECTURE.md#job-lifecycle. Until now the job held only
 * its items; here, in ONE transaction with the job's row locked (FOR UPDATE SKIP LOCKED, so two executors never start
 * the same job), it
 *   1. re-checks its targets through the management API, on the messages still dead;
 *   2. if the plan changed since it was approved (see planDrift), goes back to awaiting_approval with the reasons;
 *   3. else takes the items' messages that are still dead (they become 'replaying'), skips the others with what
 *      happened to them, pauses the entities and becomes 'pending', which claimJob then runs like any job.
 * A crash before the commit changes nothing: the job is still scheduled and the next look starts it again. After the
 * commit it is an ordinary pending job (the pause events are published after the commit; a lost one is caught up by
 * the guards' polls, as for any job).
 *
 * It also expires the jobs that waited for approval too long. Called by the executor before it claims jobs.
 */

/** More than this share of the approved messages replayed, resolved or taken meanwhile: the plan changed. */
export const DRIFT_GONE_SHARE = 0.2
const SYSTEM_ACTOR = 'lazarus'

/** `control`: where a started job's 'pause' events go (the composition root's publisher of lazarus.control). */
export type StartWaitingJobsOptions = { db: Db; control: ExchangePublisher; settings: ReplaySettings; log: Logger }

export async function startWaitingJobs({ db, control, settings, log }: StartWaitingJobsOptions): Promise<void> {
  await expireApprovals({ db })
  const skip: string[] = []
  for (let i = 0; i < 20; i++) {
    const outcome = await startOne({ db, control, settings, skip }).catch((error: unknown) => {
      if (error instanceof ConflictAtStart) {
        // An entity paused by another running replay: start once that one has ended.
        log.info('scheduled replay waits for another job\'s pauses', { job: error.jobId, reason: error.message })
        skip.push(error.jobId)
        return 'waiting' as const
      }
      throw error
    })
    if (outcome === null) return
  }
}

class ConflictAtStart extends Error {
  constructor(readonly jobId: string, message: string) {
    super(message)
  }
}

async function startOne({ db, control, settings, skip }: { db: Db; control: ExchangePublisher; settings: ReplaySettings; skip: string[] }): Promise<'started' | 'held' | 'ended' | null> {
  const sql = db.background
  let pauses: PauseDto[] = []
  const outcome = await sql.transaction(async (tx) => {
    const job = await lockDueJob({ sql: tx, skip })
    if (!job) return null
    const still = await stillDeadRoutes({ sql: tx, jobId: job.id })
    if (still.count === 0) {
      await endWaitingJob({ sql: tx, jobId: job.id, event: 'cancel', reason: 'nothing left to replay: replayed, resolved or taken meanwhile' })
      await recordAudit({ sql: tx, actor: SYSTEM_ACTOR, action: 'replay.cancelled', subject: { type: 'replay', id: job.id }, summary: `Replay ${job.id} did not start: none of its messages is dead any more`, outcome: 'cancelled' })
      return 'ended' as const
    }
    const warnings: string[] = []
    const targets = await describeTargets(still.routes, job.target, settings, warnings)
    const drift = planDrift(job, targets, still.count)
    if (drift.length > 0) {
      const { effectiveTtlSeconds } = await getReplayApprovalSettings({ db })
      const plan: ReplayPlanDto = { ...job.plan, targets, replayable: still.count, warnings: [...warnings, ...job.plan.warnings.filter((w) => !warnings.includes(w))] }
      const reasons = drift.map((d) => `plan changed since ${job.approved_by ? 'approval' : 'it was scheduled'}: ${d}`)
      await sendBackForApproval({ sql: tx, jobId: job.id, reasons, plan, ttlSeconds: effectiveTtlSeconds })
      await recordAudit({
        sql: tx,
        actor: SYSTEM_ACTOR,
        action: 'replay.approval-requested',
        subject: { type: 'replay', id: job.id },
        summary: `Replay ${job.id} did not start and needs approval again: ${drift.join('; ')}`,
        details: { reasons, requestedBy: job.created_by, approvedBefore: job.approved_by },
        outcome: 'awaiting_approval',
      })
      return 'held' as const
    }
    const { taken, skipped } = await takeItemsMessages({ sql: tx, jobId: job.id, actor: job.created_by })
    // Only now, with the job started, do the older versions it leaves out become resolved (those still dead).
    const superseded = await resolveSuperseded({ tx, jobId: job.id, ids: job.superseded_ids, actor: job.created_by })
    if (job.pause_entities) {
      const pairs = await selectJobEntities({ sql: tx, jobId: job.id, openOnly: true })
      try {
        pauses = await createJobPauses({
          tx,
          jobId: job.id,
          actor: job.created_by,
          pairs: pairs.map((p) => ({ sourceId: p.source_id, vhost: p.vhost, queue: p.queue, entityKey: p.entity_key, entityKeyRule: p.rule })),
        })
      } catch (error) {
        if (error instanceof AppError && error.code === 'conflict') throw new ConflictAtStart(job.id, error.message)
        throw error
      }
    }
    await markJobStarted({ sql: tx, jobId: job.id })
    await recordAudit({
      sql: tx,
      actor: job.created_by,
      action: 'replay.started',
      subject: { type: 'replay', id: job.id },
      summary: `Replay ${job.id} started: ${taken} message${taken === 1 ? '' : 's'}${skipped ? `, ${skipped} skipped (replayed, resolved or taken meanwhile)` : ''}${pauses.length ? `, ${pauses.length} entities paused` : ''}${superseded ? `, ${superseded} older versions resolved as superseded` : ''}`,
      details: { taken, skipped, pauses: pauses.map((p) => p.id), approvedBy: job.approved_by, warnings, superseded },
      outcome: 'pending',
    })
    return 'started' as const
  })
  if (outcome === 'started') await publishControlEvents({ control, events: toControlEvents('pause', pauses) })
  return outcome
}

/**
 * What makes a re-checked plan differ from the approved one: an exchange gone, a fan-out that was not there, a key
 * reaching other queues, or more than DRIFT_GONE_SHARE of the messages no longer dead. Routing the management API
 * could not read (exists or queues null) is no evidence of change.
 */
export function planDrift(job: Pick<DueJob, 'plan'>, targets: ReplayPlanTargetDto[], stillDead: number): string[] {
  const reasons: string[] = []
  const key = (t: ReplayPlanTargetDto) => `${t.broker ?? 'rabbitmq'}\u0000${t.exchange}\u0000${t.routingKey ?? ''}`
  const before = new Map(job.plan.targets.map((t) => [key(t), t]))
  const name = (t: ReplayPlanTargetDto) =>
    t.broker === 'jetstream'
      ? `subject "${t.routingKey}"`
      : `${t.exchange === '' ? 'the default exchange' : `exchange "${t.exchange}"`}${t.routingKey === null ? '' : ` with key "${t.routingKey}"`}`
  for (const t of targets) {
    const old = before.get(key(t))
    if (t.exists === false && old?.exists !== false) reasons.push(`${name(t)} no longer exists`)
    else if (t.fansOut && !old?.fansOut) reasons.push(`${name(t)} now routes to ${t.queues} queues (${t.queueNames.join(', ')}): a fan-out`)
    else if (old && t.queues !== null && old.queues !== null && [...t.queueNames].sort().join('\u0000') !== [...old.queueNames].sort().join('\u0000')) {
      reasons.push(`${name(t)} now reaches ${t.queueNames.join(', ') || 'no queue'} instead of ${old.queueNames.join(', ') || 'no queue'}`)
    }
  }
  const approved = job.plan.replayable
  const gone = approved - stillDead
  if (approved > 0 && gone / approved > DRIFT_GONE_SHARE) {
    reasons.push(`${gone} of the ${approved} messages were replayed, resolved or taken by another job meanwhile`)
  }
  return reasons
}

/** Jobs past their approval expiry become 'expired': nothing was marked, paused or published; their messages stay dead. */
async function expireApprovals({ db }: { db: Db }): Promise<void> {
  await db.background.transaction(async (tx) => {
    for (const job of await lockExpiredJobs({ sql: tx, limit: 100 })) {
      await endWaitingJob({ sql: tx, jobId: job.id, event: 'expire', reason: 'approval request expired' })
      await recordAudit({
        sql: tx,
        actor: SYSTEM_ACTOR,
        action: 'replay.expired',
        subject: { type: 'replay', id: job.id },
        summary: `Replay ${job.id} of ${job.total} messages (requested by ${job.created_by}) expired without approval: its messages stay dead`,
        details: { requestedBy: job.created_by },
        outcome: 'expired',
      })
    }
  })
}
