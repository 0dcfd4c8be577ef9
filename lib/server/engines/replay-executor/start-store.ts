import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { ReplayPlanDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import type { RouteRow } from '@/lib/server/replay/plan-replay'
import { transitionReplayJob } from '@/lib/server/replay/transition-replay-job'
import { STATUS_LOCK_ORDER } from '@/lib/server/selection/message-filter-sql'

/** The SQL of starting a waiting job (start-job.ts): all of it runs in the start's one transaction. */

export type DueJob = { id: string; created_by: string; plan: ReplayPlanDto; target: ReplayTarget; pause_entities: boolean; allow_fan_out: boolean; approved_by: string | null; superseded_ids: string[] }

/** The next scheduled job whose start time has come, locked; jobs another executor is starting are skipped. */
export async function lockDueJob({ sql, skip }: { sql: Sql; skip: string[] }): Promise<DueJob | undefined> {
  const { rows } = await sql.query<DueJob>(
    `SELECT id::text, created_by, plan, target, pause_entities, allow_fan_out, approved_by, superseded_ids::text[] FROM replay_jobs
     WHERE status = 'scheduled' AND start_at <= now() AND NOT (id = ANY($1::bigint[]))
     ORDER BY start_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
    [skip],
  )
  return rows[0]
}

const STILL_DEAD = `FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id LEFT JOIN dead_letter_states st ON st.dead_letter_id = i.dead_letter_id
  WHERE i.job_id = $1::bigint AND i.status = 'pending' AND coalesce(st.status, 'dead') = 'dead'`

/** How many of the job's items' messages are still dead, and where they go (for the re-check of the targets). */
export async function stillDeadRoutes({ sql, jobId }: { sql: Sql; jobId: string }): Promise<{ count: number; routes: RouteRow[] }> {
  const [count, routes] = await Promise.all([
    sql.query<{ n: number }>(`SELECT count(*)::int AS n ${STILL_DEAD}`, [jobId]),
    sql.query<RouteRow>(
      `SELECT coalesce(i.exchange, '') AS exchange, coalesce(i.routing_key, '') AS routing_key, d.origin_queue,
         coalesce((SELECT s.kind = 'jetstream' FROM sources s WHERE s.id = d.source_id), false) AS jetstream, count(*)::int AS n ${STILL_DEAD}
       GROUP BY 1, 2, 3, 4 ORDER BY n DESC, 1, 2, 3, 4 LIMIT 200`,
      [jobId],
    ),
  ])
  return { count: count.rows[0].n, routes: routes.rows }
}

/**
 * Takes the items' messages that are still dead (they become 'replaying', through the same guarded upsert as creating
 * a job: a message another job or a resolve took meanwhile is left alone) and closes the other items as skipped, with
 * what happened to their message. Returns how many were taken and skipped.
 */
export async function takeItemsMessages({ sql, jobId, actor }: { sql: Sql; jobId: string; actor: string }): Promise<{ taken: number; skipped: number }> {
  // One statement: the skip's reasons read the status rows as they were before the take (the statement's snapshot).
  const { rows } = await sql.query<{ taken: number; skipped: number }>(
    `WITH marked AS (
       INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_changed_at, status_changed_by, failed_at)
       SELECT d.id, 'replaying', now(), $2, d.failed_at
       FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id LEFT JOIN dead_letter_states cur ON cur.dead_letter_id = d.id
       WHERE i.job_id = $1::bigint AND i.status = 'pending' AND coalesce(cur.status, 'dead') = 'dead'
       ${STATUS_LOCK_ORDER}
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'replaying', status_reason = NULL,
         status_changed_at = excluded.status_changed_at, status_changed_by = excluded.status_changed_by
       WHERE st.status = 'dead'
       RETURNING st.dead_letter_id
     ),
     skipped AS (
       UPDATE replay_items i SET status = 'skipped', finished_at = now(),
         error = CASE (SELECT coalesce(st.status, 'dead') FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.id = i.dead_letter_id)
           WHEN 'replayed' THEN 'replayed meanwhile' WHEN 'resolved' THEN 'resolved meanwhile' WHEN 'held' THEN 'held meanwhile'
           WHEN 'replaying' THEN 'taken by another replay meanwhile' WHEN 'dead' THEN 'taken by another replay meanwhile'
           ELSE 'no longer stored' END
       WHERE i.job_id = $1::bigint AND i.status = 'pending' AND i.dead_letter_id NOT IN (SELECT dead_letter_id FROM marked)
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM marked)::int AS taken, (SELECT count(*) FROM skipped)::int AS skipped`,
    [jobId, actor],
  )
  const { taken, skipped } = rows[0]
  if (skipped > 0) await sql.query('UPDATE replay_jobs SET skipped = skipped + $2::int, updated_at = now() WHERE id = $1::bigint', [jobId, skipped])
  return { taken, skipped }
}

/** The re-check found a changed plan: back to awaiting approval, with the reasons and the re-checked plan. */
export async function sendBackForApproval({ sql, jobId, reasons, plan, ttlSeconds }: { sql: Sql; jobId: string; reasons: string[]; plan: ReplayPlanDto; ttlSeconds: number }): Promise<void> {
  const { rows: moved } = await transitionReplayJob({
    sql,
    event: 'replan',
    set: `approval_reasons = $2::jsonb, plan = $3::jsonb, approved_by = NULL, approved_at = NULL,
       approval_expires_at = now() + $4::int * interval '1 second'`,
    where: 'j.id = $1::bigint',
    params: [jobId, JSON.stringify(reasons), JSON.stringify(plan), ttlSeconds],
  })
  assertStillScheduled(moved.length, jobId)
}

/** Started: an ordinary pending job from here on, which claimJob takes. */
export async function markJobStarted({ sql, jobId }: { sql: Sql; jobId: string }): Promise<void> {
  const { rows: moved } = await transitionReplayJob({ sql, event: 'start', set: 'started_at = now()', where: 'j.id = $1::bigint', params: [jobId] })
  assertStillScheduled(moved.length, jobId)
}

/**
 * lockDueJob locked the job as scheduled, so the state machine cannot refuse it; if it ever does, the start's
 * transaction must not commit its audit and pauses for a job that did not move.
 */
function assertStillScheduled(moved: number, jobId: string): void {
  if (moved === 0) throw new Error(`replay job ${jobId} is no longer scheduled; its start is rolled back`)
}
