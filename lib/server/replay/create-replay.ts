import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { createJobPauses, publishControlEvents, toControlEvents } from '@/lib/server/pauses/job-pauses'
import type { Signal } from '@/lib/server/platform/signal'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import type { CreateReplayInput, ReplayCreatedDto, ReplayDryRunDto, ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { planReplay } from './plan-replay'
import { replaySettings, type ReplaySettings } from './replay-settings'
import { freezeJobPlan, insertReplayJob, recordJobSources, selectJobEntities, takeMessagesIntoJob } from './replay-store'
import { resolveSuperseded } from './resolve-superseded'
import { setJobStaging } from './stage-store'
import { describeSelection } from '@/lib/server/selection/selection-sql'
import { freezeItems, recordWaitingState } from './approval-store'
import { getReplayApprovalSettings } from './replay-approval-settings'

export type CreateReplayOptions = {
  db: Db
  /** Where the entities' 'pause' events go after the commit (the composition root's publisher of lazarus.control). */
  control: ExchangePublisher
  /** Wakes this process's replay executor when the job is created (the composition root's). */
  replayWork: Signal
  input: CreateReplayInput
  actor: string
  settings?: ReplaySettings
  /** The sources the caller may replay from (see PlanReplayOptions.sourceIds); null or absent: every source. */
  sourceIds?: string[] | null
}

/**
 * POST /api/replays. A dry run returns the plan. Otherwise, in one transaction: the job with its frozen plan, one item
 * per replayable message in publish order (oldest first death first, so an entity's messages keep their order), each
 * with a fresh replay id; the messages become 'replaying'; the entities' pauses when asked; the audit entry.
 * Refused (422, plan in details) when the plan cannot run as asked.
 */
export async function createReplay(options: CreateReplayOptions): Promise<ReplayDryRunDto | ReplayCreatedDto> {
  const { db, input, actor } = options
  const settings = options.settings ?? replaySettings()
  const planned = await planReplay({ input, actor, db, settings, sourceIds: options.sourceIds ?? null })
  const { plan } = planned
  if (input.dryRun) return { plan }
  if (!plan.canRun) throw new AppError('unprocessable', refusal(plan, input.allowFanOut === true), { plan })
  assertCountConfirmed(plan, input.confirmCount)
  if (plan.approval.required || input.startAt !== undefined) return createWaitingReplay({ ...options, planned })

  const { jobId, pauses, frozen } = await db.sql.transaction(async (tx) => {
    const jobId = await insertReplayJob({ sql: tx, job: { status: 'pending', selection: input.selection, target: planned.target, plan, actor, newTrace: input.newTrace } })
    const total = await takeMessagesIntoJob({ sql: tx, planned, jobId, actor })
    if (total === 0) throw new AppError('conflict', 'Nothing left to replay: the selected messages were replayed, resolved or taken by another job meanwhile')
    // A filter can match messages that arrived after the plan: never publish more than the caller confirmed.
    if (input.confirmCount !== undefined && total > input.confirmCount) {
      throw new AppError('conflict', `The selection now holds ${total} replayable messages, more than the ${input.confirmCount} confirmed: plan again and confirm the new count`, { confirmCount: { required: total, given: input.confirmCount } })
    }
    await recordJobSources({ sql: tx, jobId })
    const superseded = await resolveSuperseded({ tx, jobId, ids: planned.supersededIds, actor })
    let frozen: ReplayPlanDto = total === plan.replayable ? plan : { ...plan, replayable: total, estimatedSeconds: Math.ceil(total / plan.ratePerSecond) }
    if (plan.staging) frozen = { ...frozen, staging: await setJobStaging({ sql: tx, jobId, total, staging: plan.staging }) }
    await freezeJobPlan({ sql: tx, jobId, total, plan: frozen })

    let pauses: PauseDto[] = []
    if (plan.pauseEntities) {
      const pairs = await selectJobEntities({ sql: tx, jobId })
      pauses = await createJobPauses({
        tx,
        jobId,
        actor,
        pairs: pairs.map((p) => ({ sourceId: p.source_id, vhost: p.vhost, queue: p.queue, entityKey: p.entity_key, entityKeyRule: p.rule })),
      })
    }

    const target = planned.target.type === 'custom' ? `exchange "${planned.target.exchange}", key "${planned.target.routingKey}"` : planned.target.type === 'queue' ? 'the failed queues' : 'the original exchanges'
    await recordAudit({
      sql: tx,
      actor,
      action: 'replay.created',
      subject: { type: 'replay', id: jobId },
      summary: `Replay ${jobId} of ${total} message${total === 1 ? '' : 's'} (${describeSelection(input.selection)}) to ${target} at ${plan.ratePerSecond}/s${pauses.length ? `, ${pauses.length} entities paused` : ''}${superseded ? `, ${superseded} older versions resolved as superseded` : ''}`,
      details: {
        selection: input.selection, target: planned.target, ratePerSecond: plan.ratePerSecond, total, matched: plan.matched,
        excluded: plan.excluded.map((e) => ({ reason: e.reason, count: e.count })), pauseEntities: plan.pauseEntities,
        pauses: pauses.map((p) => p.id), allowFanOut: input.allowFanOut ?? false, warnings: plan.warnings, staging: frozen.staging ?? null,
        onlyNewestPerEntity: plan.onlyNewestPerEntity ?? false, superseded,
      },
      outcome: 'pending',
    })
    return { jobId, total, pauses, frozen }
  })

  await publishControlEvents({ control: options.control, events: toControlEvents('pause', pauses) })
  options.replayWork.notify()
  return { id: jobId, status: 'pending', plan: frozen }
}

/**
 * A replay that needs approval, or starts later: the job and its items (the frozen selection) only. Its messages stay
 * dead and unpaused until it starts (lib/server/engines/replay-executor/start-job.ts); docs/ARCHITECTURE.md#job-lifecycle.
 */
async function createWaitingReplay(options: CreateReplayOptions & { planned: Awaited<ReturnType<typeof planReplay>> }): Promise<ReplayCreatedDto> {
  const { db, input, actor, planned } = options
  const { plan } = planned
  const { effectiveTtlSeconds } = await getReplayApprovalSettings({ db })
  const status = plan.approval.required ? 'awaiting_approval' : 'scheduled'
  const { jobId, frozen } = await db.sql.transaction(async (tx) => {
    const jobId = await insertReplayJob({ sql: tx, job: { status, selection: input.selection, target: planned.target, plan, actor, newTrace: input.newTrace } })
    const total = await freezeItems({ sql: tx, planned, jobId })
    if (total === 0) throw new AppError('conflict', 'Nothing left to replay: the selected messages were replayed, resolved or taken by another job meanwhile')
    if (input.confirmCount !== undefined && total > input.confirmCount) {
      throw new AppError('conflict', `The selection now holds ${total} replayable messages, more than the ${input.confirmCount} confirmed: plan again and confirm the new count`, { confirmCount: { required: total, given: input.confirmCount } })
    }
    await recordJobSources({ sql: tx, jobId })
    let frozen: ReplayPlanDto = total === plan.replayable ? plan : { ...plan, replayable: total, estimatedSeconds: Math.ceil(total / plan.ratePerSecond) }
    if (plan.staging) frozen = { ...frozen, staging: await setJobStaging({ sql: tx, jobId, total, staging: plan.staging }) }
    await freezeJobPlan({ sql: tx, jobId, total, plan: frozen })
    await recordWaitingState({
      sql: tx,
      jobId,
      state: { startAt: input.startAt ?? null, reasons: plan.approval.required ? plan.approval.reasons : null, ttlSeconds: effectiveTtlSeconds, allowFanOut: input.allowFanOut === true, supersededIds: planned.supersededIds },
    })
    const when = input.startAt ? `, to start at ${input.startAt}` : ''
    await recordAudit({
      sql: tx,
      actor,
      action: status === 'awaiting_approval' ? 'replay.approval-requested' : 'replay.created',
      subject: { type: 'replay', id: jobId },
      summary:
        status === 'awaiting_approval'
          ? `Replay ${jobId} of ${total} message${total === 1 ? '' : 's'} (${describeSelection(input.selection)}) needs approval: ${plan.approval.reasons.join('; ')}${when}`
          : `Replay ${jobId} of ${total} message${total === 1 ? '' : 's'} (${describeSelection(input.selection)}) scheduled${when}`,
      details: { selection: input.selection, target: planned.target, ratePerSecond: plan.ratePerSecond, total, reasons: plan.approval.reasons, startAt: input.startAt ?? null, allowFanOut: input.allowFanOut ?? false, staging: frozen.staging ?? null, onlyNewestPerEntity: plan.onlyNewestPerEntity ?? false },
      outcome: status,
    })
    return { jobId, frozen }
  })
  // An approved or scheduled job is started by the executor's next look (no nudge needed before its time).
  return { id: jobId, status, plan: frozen }
}

/**
 * A large replay (at least the admin's `largeJobMessages`) starts only with `confirmCount` equal to what it publishes;
 * a count that is sent must match for any replay. 422 with the plan, so the caller sees the number to confirm.
 */
function assertCountConfirmed(plan: ReplayPlanDto, confirmCount: number | undefined): void {
  if (confirmCount === undefined && plan.confirmCount === null) return
  if (confirmCount === plan.replayable) return
  const details = { plan, confirmCount: { required: plan.replayable, given: confirmCount ?? null } }
  if (confirmCount === undefined) {
    throw new AppError('unprocessable', `This replay publishes ${plan.replayable} messages (large replays start at ${plan.largeJobMessages}): send confirmCount ${plan.replayable} to confirm the count`, details)
  }
  throw new AppError('unprocessable', `confirmCount ${confirmCount} does not match the ${plan.replayable} messages this replay would publish: plan again and confirm that count`, details)
}

function refusal(plan: ReplayPlanDto, allowFanOut: boolean): string {
  if (plan.replayable === 0 && plan.matched > 0 && plan.excluded.some((e) => e.reason === 'target-refused' && e.count === plan.matched)) {
    return "None of the selected messages can be replayed to this target: replays never go to amq.* exchanges, Lazarus' control or hold exchange, or through the default exchange to a queue other than the one a message failed in"
  }
  if (plan.replayable === 0) return plan.matched === 0 ? 'The selection matches no messages' : 'None of the selected messages can be replayed'
  if (!allowFanOut && plan.targets.some((t) => t.fansOut)) {
    return 'The target exchange routes these messages to more queues than the one they failed in; choose the failed queue as target or set allowFanOut'
  }
  const noQueue = plan.targets.filter((t) => t.exchange === '' && t.queues === 0)
  if (noQueue.length > 0 && plan.targets.every((t) => t.exists === false || (t.exchange === '' && t.queues === 0))) {
    const keys = noQueue.slice(0, 3).map((t) => `"${t.routingKey ?? ''}"`).join(', ')
    return `The broker would return every message unroutable: no queue is named ${keys} (the default exchange routes to the queue the routing key names)`
  }
  return 'The replay cannot run as asked: ' + (plan.warnings[0] ?? 'see the plan')
}
