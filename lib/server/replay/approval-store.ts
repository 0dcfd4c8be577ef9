import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { MESSAGES_FROM, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import type { PlannedReplay } from './plan-replay'
import { transitionReplayJob } from './transition-replay-job'

/**
 * The SQL of jobs that have not started: awaiting approval or scheduled (docs/ARCHITECTURE.md#job-lifecycle). Such a
 * job holds only its items, the frozen selection: no message is marked replaying and no entity paused, so two waiting
 * jobs may hold the same message; whichever starts first takes it (lib/server/engines/replay-executor/start-job.ts).
 */

/**
 * One item per planned message that is dead now, in publish order, without changing any message's status. Returns
 * how many.
 */
export async function freezeItems({ sql, planned, jobId }: { sql: Sql; planned: Pick<PlannedReplay, 'params' | 'eligibleWhere' | 'exchangeSql' | 'routingKeySql'>; jobId: string }): Promise<number> {
  const params = [...planned.params, jobId]
  return sql.execute(
    `INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id, status, exchange, routing_key, revision)
     SELECT $${params.length}::bigint, row_number() OVER (ORDER BY d.first_death_at NULLS LAST, d.failed_at, d.id)::int, d.id, 'replay',
       gen_random_uuid()::text, 'pending', ${planned.exchangeSql}, ${planned.routingKeySql},
       -- Frozen with the plan the approver sees: an edit made later goes out with the next replay (docs/ARCHITECTURE.md#revisions).
       (SELECT max(r.revision) FROM message_revisions r WHERE r.dead_letter_id = d.id)
     FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
     WHERE ${planned.eligibleWhere}`,
    params,
  )
}

export type WaitingState = { startAt: string | null; reasons: string[] | null; ttlSeconds: number; allowFanOut: boolean; supersededIds: string[] }

/**
 * What a just-inserted waiting job (created awaiting approval or scheduled) keeps until it starts; a job awaiting
 * approval expires after the TTL. Its status is the INSERT's.
 */
export async function recordWaitingState({ sql, jobId, state }: { sql: Sql; jobId: string; state: WaitingState }): Promise<void> {
  await sql.query(
    `UPDATE replay_jobs SET start_at = $2::timestamptz, approval_reasons = $3::jsonb, allow_fan_out = $5, superseded_ids = $6::bigint[],
       approval_expires_at = CASE WHEN status = 'awaiting_approval' THEN now() + $4::int * interval '1 second' END, updated_at = now()
     WHERE id = $1::bigint`,
    [jobId, state.startAt, state.reasons ? JSON.stringify(state.reasons) : null, state.ttlSeconds, state.allowFanOut, state.supersededIds],
  )
}

export type DecisionCandidate = { status: string; created_by: string; expired: boolean; start_at: Date | null; total: number }

/** Locks a job for approve or reject (a caller limited to `sourceIds`: only a job all of whose sources are theirs). */
export async function lockJobForDecision({ sql, id, sourceIds }: { sql: Sql; id: string; sourceIds: string[] | null }): Promise<DecisionCandidate | undefined> {
  const params: unknown[] = [id]
  let scope = ''
  if (sourceIds) {
    params.push(sourceIds)
    scope = 'AND j.source_ids IS NOT NULL AND j.source_ids <@ $2::bigint[]'
  }
  const { rows } = await sql.query<DecisionCandidate>(
    `SELECT j.status, j.created_by, coalesce(j.approval_expires_at <= now(), false) AS expired, j.start_at, j.total
     FROM replay_jobs j WHERE j.id = $1::bigint AND j.kind = 'replay' ${scope} FOR UPDATE`,
    params,
  )
  return rows[0]
}

/**
 * Approved: scheduled for its start time, or for now when that has passed (the executor starts it at its next look).
 * Null when the job was no longer awaiting approval.
 */
export async function approveJob({ sql, jobId, actor, comment }: { sql: Sql; jobId: string; actor: string; comment: string }): Promise<Date | null> {
  const { rows } = await transitionReplayJob<{ start_at: Date }>({
    sql,
    event: 'approve',
    set: `start_at = greatest(coalesce(j.start_at, now()), now()), approved_by = $2, approved_at = now(),
       decision_comment = $3, approval_expires_at = NULL, error = NULL`,
    where: 'j.id = $1::bigint',
    params: [jobId, actor, comment],
    returning: 'j.start_at',
  })
  return rows[0]?.start_at ?? null
}

/**
 * Ends a job that never started (rejected, expired, cancelled): its items are cancelled with the reason. No message
 * status changes: a waiting job marked none. Returns the job's cancelled items, or 0 when the job was no longer waiting.
 */
export async function endWaitingJob(options: { sql: Sql; jobId: string; event: 'reject' | 'expire' | 'cancel'; reason: string; actor?: string; comment?: string }): Promise<number> {
  const { sql, event } = options
  const { rows } = await transitionReplayJob<{ n: number }>({
    sql,
    event,
    with: `items AS (
       UPDATE replay_items SET status = 'cancelled', error = $2, finished_at = now()
       WHERE job_id IN (SELECT id FROM allowed) AND status IN ('pending', 'in_flight') RETURNING 1
     )`,
    set: `finished_at = now(), cancelled = j.cancelled + (SELECT count(*) FROM items)::int,
       rejected_by = CASE WHEN $5::boolean THEN $3 ELSE j.rejected_by END, rejected_at = CASE WHEN $5::boolean THEN now() ELSE j.rejected_at END,
       decision_comment = coalesce($4, j.decision_comment), approval_expires_at = NULL`,
    where: 'j.id = $1::bigint',
    params: [options.jobId, options.reason, options.actor ?? null, options.comment ?? null, event === 'reject'],
    returning: 'j.cancelled AS n',
  })
  return rows[0]?.n ?? 0
}

/** Awaiting-approval jobs past their expiry, locked (skipping those another process handles) for `endWaitingJob`. */
export async function lockExpiredJobs({ sql, limit }: { sql: Sql; limit: number }): Promise<{ id: string; created_by: string; total: number }[]> {
  const { rows } = await sql.query<{ id: string; created_by: string; total: number }>(
    `SELECT id::text, created_by, total FROM replay_jobs WHERE status = 'awaiting_approval' AND approval_expires_at <= now()
     ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  )
  return rows
}

/**
 * Dead messages of the job's group or filter stored after the job was created, counted through the same selection
 * SQL as any replay (`where` over MESSAGES_FROM with `params`).
 */
export async function countArrived({ sql, where, params }: { sql: Sql; where: string; params: unknown[] }): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${MESSAGES_FROM} WHERE ${where} AND ${STATUS_SQL} = 'dead'`, params)
  return rows[0].n
}
