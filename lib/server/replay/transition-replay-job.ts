import 'server-only'
import type { Sql, SqlResult } from '@/lib/server/platform/db/sql'
import { transitionsOf, type ReplayJobEvent, type ReplayJobStatus } from '@/lib/shared/replay-job-machine'

export type TransitionReplayJobOptions = {
  sql: Sql
  /** Not 'create': a job is created by its INSERT, in one of the statuses the table allows (ReplayJobCreatedStatus). */
  event: Exclude<ReplayJobEvent, 'create'>
  /** The status to move to, for an event with several (finish); otherwise the table's, from the job's status. */
  to?: ReplayJobStatus
  /** Which jobs: an SQL condition over `replay_jobs j`. */
  where: string
  /** The parameters `where`, `set`, `with` and `returning` use, as $1, $2, …; the function appends its own after them. */
  params?: unknown[]
  /** The other columns the event writes (`updated_at` is always written). */
  set?: string
  /**
   * Common table expressions the statement starts with (`name AS (…)`, without WITH). They run whether or not the job
   * moves (a data-modifying CTE always runs), so they see `allowed`, the ids of the jobs this event may move, locked
   * and checked again if another transaction changed them meanwhile, and must touch only those; the UPDATE moves
   * exactly those jobs.
   */
  with?: string
  /** Default: the job's id as `id`. */
  returning?: string
}

/**
 * The one way a replay job's status changes (lib/shared/replay-job-machine.ts, docs/ARCHITECTURE.md#job-lifecycle):
 * one UPDATE whose new status comes from the table and whose `WHERE status = ANY(…)` takes only jobs in a status the
 * event may happen in. A job in any other status is left as it was, row and updated_at alike, and is missing from the
 * result (no row for one job): the caller answers as it would for a job that is gone or already ended. Deciding in
 * the statement, not in a read before it, keeps the table true even for a caller that holds no lock.
 */
export async function transitionReplayJob<Row = { id: string }>(options: TransitionReplayJobOptions): Promise<SqlResult<Row>> {
  const { sql, event, to } = options
  const moves = transitionsOf(event, to)
  const from = moves.map((m) => m.from)
  if (moves.length === 0) throw new Error(`replay job event "${event}" has no transition${to ? ` to "${to}"` : ''} in lib/shared/replay-job-machine.ts`)
  if (new Set(from).size !== from.length) throw new Error(`replay job event "${event}" leads to several statuses from one status: name the one it goes to`)
  const params = [...(options.params ?? []), from, moves.map((m) => m.to)]
  const fromParam = `$${params.length - 1}::text[]`
  const toParam = `$${params.length}::text[]`
  const status = `(${toParam})[array_position(${fromParam}, j.status)]`
  const others = `${options.set ? `${options.set}, ` : ''}updated_at = now()`
  const returning = options.returning ?? 'j.id::text AS id'
  if (!options.with) {
    return sql.query<Row>(`UPDATE replay_jobs j SET status = ${status}, ${others} WHERE j.status = ANY(${fromParam}) AND (${options.where}) RETURNING ${returning}`, params)
  }
  // With CTEs beside it, `allowed` decides for both: its rows are locked (FOR UPDATE re-reads a row another
  // transaction changed, and drops it if its status no longer allows the event), so what the CTEs touch and what the
  // UPDATE moves cannot differ, whatever lock the caller holds.
  return sql.query<Row>(
    `WITH allowed AS (SELECT j.id FROM replay_jobs j WHERE j.status = ANY(${fromParam}) AND (${options.where}) FOR UPDATE OF j),
     ${options.with}
     UPDATE replay_jobs j SET status = ${status}, ${others} WHERE j.id IN (SELECT id FROM allowed) RETURNING ${returning}`,
    params,
  )
}
