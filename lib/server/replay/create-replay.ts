import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { getDb } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { MESSAGES_FROM } from '@/lib/server/messages/message-filter-sql'
import { createJobPauses, publishControlEvents, toControlEvents } from '@/lib/server/pauses/job-pauses'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import type { CreateReplayInput, ReplayCreatedDto, ReplayDryRunDto, ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { planReplay } from './plan-replay'
import { replaySettings, type ReplaySettings } from './replay-settings'
import { signalReplayWork } from '@/lib/server/engines/replay-executor/replay-signal'
import { describeSelection } from '@/lib/server/selection/selection-sql'

export type CreateReplayOptions = {
  input: CreateReplayInput
  actor: string
  sql?: Sql
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
  const sql = options.sql ?? (await getDb()).sql
  const settings = options.settings ?? replaySettings()
  const { input, actor } = options
  const planned = await planReplay({ input, actor, sql, settings, sourceIds: options.sourceIds ?? null })
  const { plan } = planned
  if (input.dryRun) return { plan }
  if (!plan.canRun) throw new AppError('unprocessable', refusal(plan, input.allowFanOut === true), { plan })

  const { jobId, pauses, frozen } = await sql.transaction(async (tx) => {
    const { rows: job } = await tx.query<{ id: string }>(
      `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, pause_entities, plan, created_by)
       VALUES ('replay', 'pending', $1::jsonb, $2::jsonb, $3, $4, $5::jsonb, $6) RETURNING id::text`,
      [JSON.stringify(input.selection), JSON.stringify(planned.target), plan.ratePerSecond, plan.pauseEntities, JSON.stringify(plan), actor],
    )
    const jobId = job[0].id
    const params = [...planned.params, jobId, actor]
    const [jobParam, actorParam] = [params.length - 1, params.length]
    // A dead message has no status row (or one that says dead): the upsert writes or takes it. The unique key and the
    // re-check of a row another transaction changed meanwhile (status = 'dead' again, after its commit) mean two jobs
    // created at once never share a message; no separate FOR UPDATE pass over the selection.
    const { rowCount: total } = await tx.query(
      // What the items need is read back through the primary keys: a join of two CTEs (no statistics) can turn into a
      // nested loop over both, a hundred thousand squared.
      `WITH marked AS (
         INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_changed_at, status_changed_by, failed_at)
         SELECT d.id, 'replaying', now(), $${actorParam}, d.failed_at
         FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
         WHERE ${planned.eligibleWhere}
         ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'replaying', status_reason = NULL,
           status_changed_at = excluded.status_changed_at, status_changed_by = excluded.status_changed_by
         WHERE st.status = 'dead'
         RETURNING st.dead_letter_id
       )
       INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id, status, exchange, routing_key)
       SELECT $${jobParam}::bigint, row_number() OVER (ORDER BY d.first_death_at NULLS LAST, d.failed_at, d.id)::int, d.id, 'replay',
         gen_random_uuid()::text, 'pending', ${planned.exchangeSql}, ${planned.routingKeySql}
       FROM marked m JOIN dead_letters d ON d.id = m.dead_letter_id JOIN sources s ON s.id = d.source_id`,
      params,
    )
    if (total === 0) throw new AppError('conflict', 'Nothing left to replay: the selected messages were replayed, resolved or taken by another job meanwhile')
    // Users limited to some sources see a job only when all of its messages are theirs (list-replays.ts).
    await tx.query(
      `UPDATE replay_jobs SET source_ids = ARRAY(SELECT DISTINCT d.source_id FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE i.job_id = $1::bigint ORDER BY 1)
       WHERE id = $1::bigint`,
      [jobId],
    )
    const frozen: ReplayPlanDto = total === plan.replayable ? plan : { ...plan, replayable: total, estimatedSeconds: Math.ceil(total / plan.ratePerSecond) }
    await tx.query('UPDATE replay_jobs SET total = $2, plan = $3::jsonb WHERE id = $1::bigint', [jobId, total, JSON.stringify(frozen)])

    let pauses: PauseDto[] = []
    if (plan.pauseEntities) {
      const { rows: pairs } = await tx.query<{ source_id: string; vhost: string; queue: string; entity_key: string; rule: unknown }>(
        `SELECT DISTINCT d.source_id::text, s.vhost, d.origin_queue AS queue, d.entity_key, s.entity_key AS rule
         FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id JOIN sources s ON s.id = d.source_id
         WHERE i.job_id = $1::bigint AND d.entity_key IS NOT NULL AND d.origin_queue IS NOT NULL`,
        [jobId],
      )
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
      summary: `Replay ${jobId} of ${total} message${total === 1 ? '' : 's'} (${describeSelection(input.selection)}) to ${target} at ${plan.ratePerSecond}/s${pauses.length ? `, ${pauses.length} entities paused` : ''}`,
      details: {
        selection: input.selection, target: planned.target, ratePerSecond: plan.ratePerSecond, total, matched: plan.matched,
        excluded: plan.excluded.map((e) => ({ reason: e.reason, count: e.count })), pauseEntities: plan.pauseEntities,
        pauses: pauses.map((p) => p.id), allowFanOut: input.allowFanOut ?? false, warnings: plan.warnings,
      },
      outcome: 'pending',
    })
    return { jobId, total, pauses, frozen }
  })

  await publishControlEvents(toControlEvents('pause', pauses))
  signalReplayWork()
  return { id: jobId, status: 'pending', plan: frozen }
}

function refusal(plan: ReplayPlanDto, allowFanOut: boolean): string {
  if (plan.replayable === 0 && plan.matched > 0 && plan.excluded.some((e) => e.reason === 'target-refused' && e.count === plan.matched)) {
    return "None of the selected messages can be replayed to this target: replays never go to amq.* exchanges, Lazarus' control or hold exchange, or through the default exchange to a queue other than the one a message failed in"
  }
  if (plan.replayable === 0) return plan.matched === 0 ? 'The selection matches no messages' : 'None of the selected messages can be replayed'
  if (!allowFanOut && plan.targets.some((t) => t.fansOut)) {
    return 'The target exchange routes these messages to more queues than the one they failed in; choose the failed queue as target or set allowFanOut'
  }
  return 'The replay cannot run as asked: ' + (plan.warnings[0] ?? 'see the plan')
}
