import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { MESSAGES_FROM, STATUS_LOCK_ORDER } from '@/lib/server/selection/message-filter-sql'
import type { ReplayJobCreatedStatus } from '@/lib/shared/replay-job-machine'
import type { ReplayPlanDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import type { Selection } from '@/lib/shared/schemas/selection'
import { ITEM_STATUS_SQL } from './item-status-sql'
import type { PlannedReplay } from './plan-replay'
import type { ItemDtoRow, JobDtoRow } from './to-replay-dto'
import { transitionReplayJob } from './transition-replay-job'

/**
 * The SQL of replay jobs as the API creates, reads and cancels them. Planning a replay (which messages, which targets)
 * is lib/server/replay/plan-replay.ts; running jobs is the executor's (lib/server/engines/replay-executor/job-store.ts).
 */

const JOB_COLUMNS = `j.id::text, j.kind, j.status, j.total, j.published, j.confirmed, j.unroutable, j.failed, j.skipped, j.released,
  j.cancelled, j.duplicates, j.rate_per_second, j.current_rate, j.rate_sampled_at > now() - interval '10 seconds' AS rate_fresh, j.target, j.selection,
  j.pause_entities, j.new_trace, j.cancel_requested_at, j.error, j.created_by, j.created_at, j.started_at, j.finished_at,
  j.stage_bounds, j.stage, j.stage_published_at, j.window_ms, j.halt_share, j.halt_min, j.stage_log,
  (SELECT row_to_json(h) FROM replay_halts h WHERE h.job_id = j.id ORDER BY h.id DESC LIMIT 1) AS last_halt,
  j.start_at, j.approval_reasons, j.approval_expires_at, j.approved_by, j.approved_at, j.rejected_by, j.rejected_at, j.decision_comment`

/**
 * A job a user limited to some sources may see: every message of it is of those sources (`param` is their ids as a
 * bigint[] parameter). Release jobs (held messages) have no source list and stay with unlimited users.
 */
const jobWithinSourcesSql = (param: string) => `(j.source_ids IS NOT NULL AND j.source_ids <@ ${param}::bigint[])`

/** `j.id = $1` and, for a caller limited to `sourceIds`, a job of theirs. */
const jobById = (id: string, sourceIds: string[] | null) => ({
  where: `j.id = $1::bigint${sourceIds ? ` AND ${jobWithinSourcesSql('$2')}` : ''}`,
  params: sourceIds ? [id, sourceIds] : [id],
})

export async function selectJob({ sql, id, sourceIds = null }: { sql: Sql; id: string; sourceIds?: string[] | null }): Promise<(JobDtoRow & { plan: ReplayPlanDto }) | undefined> {
  const { where, params } = jobById(id, sourceIds)
  const { rows } = await sql.query<JobDtoRow & { plan: ReplayPlanDto }>(`SELECT ${JOB_COLUMNS}, j.plan FROM replay_jobs j WHERE ${where}`, params)
  return rows[0]
}

export async function jobVisible({ sql, id, sourceIds }: { sql: Sql; id: string; sourceIds: string[] | null }): Promise<boolean> {
  const { where, params } = jobById(id, sourceIds)
  const { rows } = await sql.query(`SELECT 1 FROM replay_jobs j WHERE ${where}`, params)
  return rows.length > 0
}

export type JobPauseRow = { id: string; queue: string; entity_key: string | null; status: string }

export async function selectJobPauses({ sql, jobId }: { sql: Sql; jobId: string }): Promise<JobPauseRow[]> {
  const { rows } = await sql.query<JobPauseRow>('SELECT id::text, queue, entity_key, status FROM pauses WHERE replay_job_id = $1::bigint ORDER BY pauses.id LIMIT 1000', [jobId])
  return rows
}

export type JobPageQuery = { sourceIds: string[] | null; status?: string; cursor: { at: string; id: string } | null; limit: number }

/** Jobs newest first on (created_at, id), with created_at to the microsecond as text for the next cursor. */
export async function selectJobPage({ sql, sourceIds, status, cursor, limit }: { sql: Sql } & JobPageQuery): Promise<(JobDtoRow & { created_at_text: string })[]> {
  const params: unknown[] = []
  const where: string[] = []
  if (sourceIds) {
    params.push(sourceIds)
    where.push(jobWithinSourcesSql(`$${params.length}`))
  }
  if (status) {
    params.push(status)
    where.push(`j.status = $${params.length}`)
  }
  if (cursor) {
    params.push(cursor.at, cursor.id)
    where.push(`(j.created_at, j.id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`)
  }
  params.push(limit)
  const { rows } = await sql.query<JobDtoRow & { created_at_text: string }>(
    `SELECT ${JOB_COLUMNS}, to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at_text
     FROM replay_jobs j WHERE ${where.length ? where.join(' AND ') : 'TRUE'}
     ORDER BY j.created_at DESC, j.id DESC LIMIT $${params.length}`,
    params,
  )
  return rows
}

/** A job's items in publish order after `afterSeq`, optionally only those with the shown `status`. */
export async function selectItemPage({ sql, jobId, afterSeq, limit, status }: { sql: Sql; jobId: string; afterSeq: number; limit: number; status?: string }): Promise<ItemDtoRow[]> {
  const params: unknown[] = [jobId, afterSeq, limit]
  let statusSql = ''
  if (status) {
    params.push(status)
    statusSql = `AND ${ITEM_STATUS_SQL} = $${params.length}`
  }
  const { rows } = await sql.query<ItemDtoRow>(
    `SELECT i.seq, i.dead_letter_id::text, i.kind, i.replay_id, ${ITEM_STATUS_SQL} AS status, i.exchange, i.routing_key, i.error, i.published_at,
       i.finished_at, d.entity_key, d.error_type, i.superseded_by_version, i.superseded_note
     FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id LEFT JOIN dead_letters d ON d.id = i.dead_letter_id
     WHERE i.job_id = $1::bigint AND i.seq > $2::int ${statusSql}
     ORDER BY i.seq LIMIT $3`,
    params,
  )
  return rows
}

export type CancelCandidate = { kind: string; status: string; cancel_requested_at: Date | null; unleased: boolean; pauses: number; total: number }

/** Locks the job (a caller limited to `sourceIds`: only theirs) until the transaction ends, with what cancelling needs. */
export async function lockJobForCancel({ sql, id, sourceIds }: { sql: Sql; id: string; sourceIds: string[] | null }): Promise<CancelCandidate | undefined> {
  const { where, params } = jobById(id, sourceIds)
  const { rows } = await sql.query<CancelCandidate>(
    `SELECT kind, status, cancel_requested_at, (lease_expires_at IS NULL OR lease_expires_at < now()) AS unleased, total,
       (SELECT count(*)::int FROM pauses p WHERE p.replay_job_id = j.id) AS pauses
     FROM replay_jobs j WHERE ${where} FOR UPDATE`,
    params,
  )
  return rows[0]
}

/** False when the job has ended (or not started: a waiting job is cancelled by endWaitingJob). */
export async function requestCancel({ sql, id, actor }: { sql: Sql; id: string; actor: string }): Promise<boolean> {
  // A halted job (it becomes running), or one observing a stage's window, is handed back to the executor at once to
  // close its items.
  const { rows: moved } = await transitionReplayJob({
    sql,
    event: 'request-cancel',
    set: 'cancel_requested_at = now(), cancel_requested_by = $2, not_before = NULL',
    where: 'j.id = $1::bigint',
    params: [id, actor],
  })
  return moved.length > 0
}

export type NewReplayJob = { status: ReplayJobCreatedStatus; selection: Selection; target: ReplayTarget; plan: ReplayPlanDto; actor: string; newTrace?: boolean }

/** The job row, created in a status the state machine allows for `create` (lib/shared/replay-job-machine.ts). */
export async function insertReplayJob({ sql, job }: { sql: Sql; job: NewReplayJob }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, pause_entities, plan, created_by, new_trace)
     VALUES ('replay', $7, $1::jsonb, $2::jsonb, $3, $4, $5::jsonb, $6, $8) RETURNING id::text`,
    [JSON.stringify(job.selection), JSON.stringify(job.target), job.plan.ratePerSecond, job.plan.pauseEntities, JSON.stringify(job.plan), job.actor, job.status, job.newTrace ?? false],
  )
  return rows[0].id
}

/**
 * Takes the planned messages that are still dead into the job: each becomes 'replaying' and gets an item in publish
 * order (oldest first death first, so an entity's messages keep their order) with a fresh replay id. Returns how many.
 *
 * A dead message has no status row (or one that says dead): the upsert writes or takes it. The unique key and the
 * re-check of a row another transaction changed meanwhile (status = 'dead' again, after its commit) mean two jobs
 * created at once never share a message; no separate FOR UPDATE pass over the selection.
 */
export async function takeMessagesIntoJob({ sql, planned, jobId, actor }: {
  sql: Sql
  planned: Pick<PlannedReplay, 'params' | 'eligibleWhere' | 'exchangeSql' | 'routingKeySql'>
  jobId: string
  actor: string
}): Promise<number> {
  const params = [...planned.params, jobId, actor]
  const [jobParam, actorParam] = [params.length - 1, params.length]
  return sql.execute(
    // What the items need is read back through the primary keys: a join of two CTEs (no statistics) can turn into a
    // nested loop over both, a hundred thousand squared.
    `WITH marked AS (
       INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_changed_at, status_changed_by, failed_at)
       SELECT d.id, 'replaying', now(), $${actorParam}, d.failed_at
       FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
       WHERE ${planned.eligibleWhere}
       ${STATUS_LOCK_ORDER}
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'replaying', status_reason = NULL,
         status_changed_at = excluded.status_changed_at, status_changed_by = excluded.status_changed_by
       WHERE st.status = 'dead'
       RETURNING st.dead_letter_id
     )
     INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id, status, exchange, routing_key, revision)
     SELECT $${jobParam}::bigint, row_number() OVER (ORDER BY d.first_death_at NULLS LAST, d.failed_at, d.id)::int, d.id, 'replay',
       gen_random_uuid()::text, 'pending', ${planned.exchangeSql}, ${planned.routingKeySql},
       -- The job sends the newest revision as of now, whatever edits come later (docs/ARCHITECTURE.md#revisions).
       (SELECT max(r.revision) FROM message_revisions r WHERE r.dead_letter_id = d.id)
     FROM marked m JOIN dead_letters d ON d.id = m.dead_letter_id JOIN sources s ON s.id = d.source_id`,
    params,
  )
}

/**
 * Records which sources the job's messages are of (users limited to some sources see a job only when all are theirs)
 * and their error groups.
 */
export async function recordJobSources({ sql, jobId }: { sql: Sql; jobId: string }): Promise<void> {
  await sql.query(
    // group_ids: what "failed again in a new group" compares with (docs/ARCHITECTURE.md#stages-and-halts).
    `UPDATE replay_jobs SET (source_ids, group_ids) = (
       SELECT array_agg(DISTINCT d.source_id ORDER BY d.source_id), array_agg(DISTINCT d.group_id ORDER BY d.group_id)
       FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE i.job_id = $1::bigint)
     WHERE id = $1::bigint`,
    [jobId],
  )
}

export async function freezeJobPlan({ sql, jobId, total, plan }: { sql: Sql; jobId: string; total: number; plan: ReplayPlanDto }): Promise<void> {
  await sql.query('UPDATE replay_jobs SET total = $2, plan = $3::jsonb WHERE id = $1::bigint', [jobId, total, JSON.stringify(plan)])
}

export type JobEntity = { source_id: string; vhost: string; queue: string; entity_key: string; rule: unknown }

/**
 * The (queue, entity) pairs the job's messages failed in, with their source's entity-key rule: what pausing covers.
 * `openOnly`: of its open items only (a job starting late skipped the messages that changed meanwhile).
 */
export async function selectJobEntities({ sql, jobId, openOnly = false }: { sql: Sql; jobId: string; openOnly?: boolean }): Promise<JobEntity[]> {
  const { rows } = await sql.query<JobEntity>(
    `SELECT DISTINCT d.source_id::text, s.vhost, d.origin_queue AS queue, d.entity_key, s.entity_key AS rule
     FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id JOIN sources s ON s.id = d.source_id
     -- JetStream has no pause guard yet (docs/jetstream.md#what-is-not-there-yet): its entities are not paused.
     WHERE i.job_id = $1::bigint AND d.entity_key IS NOT NULL AND d.origin_queue IS NOT NULL AND s.kind <> 'jetstream'${openOnly ? " AND i.status = 'pending'" : ''}`,
    [jobId],
  )
  return rows
}

/**
 * Ends the open items of a job that will not be published (cancel, or a job that failed), returning their dead
 * letters to dead (held, for releases) with the reason. `kinds` limits it (a cancel leaves releases to go out).
 */
export async function closeOpenItems(options: { sql: Sql; jobId: string; actor: string; status: 'cancelled' | 'failed'; reason: string; kinds: ('replay' | 'release')[] }): Promise<number> {
  const { sql } = options
  const { rows } = await sql.query<{ n: number }>(
    `WITH items AS (
       UPDATE replay_items SET status = $3, error = $4, finished_at = now()
       WHERE job_id = $1::bigint AND status IN ('pending', 'in_flight') AND kind = ANY($5::text[])
       RETURNING dead_letter_id, kind
     ),
     moved AS (
       UPDATE dead_letter_states st SET status = CASE WHEN it.kind = 'release' THEN 'held' ELSE 'dead' END, status_reason = $4,
         status_changed_at = now(), status_changed_by = $2
       FROM items it WHERE st.dead_letter_id = it.dead_letter_id AND coalesce(st.status, '') = 'replaying' RETURNING 1
     )
     SELECT (SELECT count(*) FROM items)::int AS n, (SELECT count(*) FROM moved)::int AS moved`,
    [options.jobId, options.actor, options.status, options.reason, options.kinds],
  )
  const n = rows[0].n
  if (n > 0) {
    await sql.query(
      `UPDATE replay_jobs SET ${options.status === 'cancelled' ? 'cancelled = cancelled' : 'failed = failed'} + $2::int, updated_at = now() WHERE id = $1::bigint`,
      [options.jobId, n],
    )
  }
  return n
}

export type FinishedJob = {
  id: string; kind: string; status: string; total: number; published: number; confirmed: number; unroutable: number
  failed: number; skipped: number; released: number; cancelled: number; created_by: string; cancel_requested_by: string | null
}

/** Marks the job finished if this worker still holds it; null when the lease was lost. */
/**
 * Marks the job finished if this worker still holds it (`owner` null: a pending job nobody claimed, being cancelled);
 * null when the lease was lost or the job is in no status it can finish from.
 */
export async function finishJob(options: { sql: Sql; jobId: string; owner: string | null; status: 'completed' | 'cancelled' | 'failed'; error?: string | null }): Promise<FinishedJob | null> {
  const { sql } = options
  const { rows } = await transitionReplayJob<FinishedJob>({
    sql,
    event: 'finish',
    to: options.status,
    set: 'finished_at = now(), lease_owner = NULL, lease_expires_at = NULL, current_rate = NULL, error = $3',
    where: 'j.id = $1::bigint AND ($2::text IS NULL OR j.lease_owner = $2)',
    params: [options.jobId, options.owner, options.error ?? null],
    returning: 'j.id::text, j.kind, j.status, j.total, j.published, j.confirmed, j.unroutable, j.failed, j.skipped, j.released, j.cancelled, j.created_by, j.cancel_requested_by',
  })
  return rows[0] ?? null
}

/**
 * SQL text of a version as people read it: an ISO time (UTC, milliseconds) for a source whose version rule reads
 * times, else the number. `v` is a double precision expression; `rule` the source's entity_version rule.
 */
const versionTextSql = (v: string, rule: string) =>
  `CASE WHEN ${rule}->>'type' = 'time' THEN to_char(to_timestamp(${v} / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ELSE ${v}::text END`

/**
 * "Only the newest per entity" (docs/ARCHITECTURE.md#entity-versions): of `ids` (the plan's older versions), the
 * messages still dead whose entity the job holds at a higher version become 'resolved' with the reason "superseded by
 * version V", in the job's transaction. One left behind because its newer version went elsewhere meanwhile (another
 * job took it) stays dead. Returns the moved messages per group and source, for the counters.
 */
export async function resolveSupersededMessages({ sql, jobId, ids, actor }: { sql: Sql; jobId: string; ids: string[]; actor: string }): Promise<{ group_id: string; source_id: string; n: number }[]> {
  const { rows } = await sql.query<{ group_id: string; source_id: string; n: number }>(
    `WITH newest AS (
       SELECT d.source_id, d.entity_key, max(d.entity_version) AS v FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id
       WHERE i.job_id = $1::bigint AND i.kind = 'replay' AND d.entity_key IS NOT NULL AND d.entity_version IS NOT NULL GROUP BY 1, 2
     ),
     resolved AS (
       INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_reason, status_changed_at, status_changed_by, failed_at)
       SELECT d.id, 'resolved', 'superseded by version ' || ${versionTextSql('n.v', 's.entity_version')}, now(), $3, d.failed_at
       FROM dead_letters d JOIN newest n ON n.source_id = d.source_id AND n.entity_key = d.entity_key JOIN sources s ON s.id = d.source_id
       LEFT JOIN dead_letter_states cur ON cur.dead_letter_id = d.id
       WHERE d.id = ANY($2::bigint[]) AND d.entity_version < n.v AND coalesce(cur.status, 'dead') = 'dead'
       ${STATUS_LOCK_ORDER}
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'resolved', status_reason = excluded.status_reason,
         status_changed_at = excluded.status_changed_at, status_changed_by = excluded.status_changed_by
       WHERE st.status = 'dead'
       RETURNING st.dead_letter_id
     )
     SELECT d.group_id::text, d.source_id::text, count(*)::int AS n FROM resolved r JOIN dead_letters d ON d.id = r.dead_letter_id GROUP BY 1, 2 ORDER BY 1, 2`,
    [jobId, ids, actor],
  )
  return rows
}

export type SupersededItem = {
  job_id: string; seq: number; dead_letter_id: string; exchange: string | null; routing_key: string | null
  origin_queue: string | null; held_from: string | null; vhost: string | null; rule: unknown
}

/** The item that published `replayId` (replay_items_replay_id_idx), with where its message went and its source's rule. */
export async function findItemByReplayId({ sql, replayId }: { sql: Sql; replayId: string }): Promise<SupersededItem | undefined> {
  const { rows } = await sql.query<SupersededItem>(
    `SELECT i.job_id::text, i.seq, i.dead_letter_id::text, i.exchange, i.routing_key, d.origin_queue, d.held_from, coalesce(s.vhost, '/') AS vhost,
       s.entity_version AS rule
     FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id LEFT JOIN sources s ON s.id = d.source_id
     WHERE i.replay_id = $1 LIMIT 1`,
    [replayId],
  )
  return rows[0]
}

/** Records a guard's "superseded by version V" on an item, unless it holds that version or a higher one already. */
export async function markItemSuperseded({ sql, jobId, seq, version, note }: { sql: Sql; jobId: string; seq: number; version: number; note: string }): Promise<boolean> {
  const changed = await sql.execute(
    `UPDATE replay_items SET superseded_by_version = $3, superseded_note = $4, superseded_at = now()
     WHERE job_id = $1::bigint AND seq = $2 AND (superseded_by_version IS NULL OR superseded_by_version < $3)`,
    [jobId, seq, version, note],
  )
  return changed > 0
}
