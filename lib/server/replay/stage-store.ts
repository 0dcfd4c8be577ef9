import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { stageBounds } from '@/lib/shared/replay-stages'
import type { ReplayStagingPlanDto } from '@/lib/shared/schemas/replay'
import { transitionReplayJob } from './transition-replay-job'

/** The SQL of staged jobs as the API creates and resumes them; the executor's is engines/replay-executor/stage-control-store.ts. */

/**
 * Freezes the staging on a job created with `total` items: the stage bounds for that count (the plan's were for its
 * own count, which may have shrunk), the window and the halt threshold. Returns the staging as frozen.
 */
export async function setJobStaging({ sql, jobId, total, staging }: { sql: Sql; jobId: string; total: number; staging: ReplayStagingPlanDto }): Promise<ReplayStagingPlanDto> {
  const bounds = stageBounds(total, staging)
  await sql.query(
    `UPDATE replay_jobs SET stage_bounds = $2::int[], stage = 0, window_ms = $3, halt_share = $4, halt_min = $5,
       stage_log = jsonb_build_array(jsonb_build_object('stage', 0))
     WHERE id = $1::bigint`,
    [jobId, bounds, staging.windowSeconds * 1000, staging.haltPercent / 100, staging.haltMinMessages],
  )
  return { ...staging, stages: bounds.map((b, i) => ({ throughSeq: b, size: b - (i === 0 ? 0 : bounds[i - 1]) })) }
}

export type HaltedJob = { status: string; kind: string; halted_at: Date | null; stage: number }

/** Locks a job for resume (a caller limited to `sourceIds`: only theirs). */
export async function lockJobForResume({ sql, jobId, sourceIds }: { sql: Sql; jobId: string; sourceIds: string[] | null }): Promise<HaltedJob | undefined> {
  const { rows } = await sql.query<HaltedJob>(
    `SELECT status, kind, halted_at, stage FROM replay_jobs j
     WHERE j.id = $1::bigint ${sourceIds ? 'AND j.source_ids IS NOT NULL AND j.source_ids <@ $2::bigint[]' : ''} FOR UPDATE`,
    sourceIds ? [jobId, sourceIds] : [jobId],
  )
  return rows[0]
}

/**
 * Hands a halted job back to the executor: running, claimable at once; re-failures stored until now were seen by the
 * operator and no longer count toward a halt (refailures_since). False when the job was not halted.
 */
export async function resumeHaltedJob({ sql, jobId, actor }: { sql: Sql; jobId: string; actor: string }): Promise<boolean> {
  const { rows: moved } = await transitionReplayJob({
    sql,
    event: 'resume',
    set: 'halted_at = NULL, not_before = NULL, refailures_since = now(), run_failures = 0, lease_owner = NULL, lease_expires_at = NULL',
    where: 'j.id = $1::bigint',
    params: [jobId],
  })
  if (moved.length === 0) return false
  await endHalt({ sql, jobId, actor, outcome: 'resumed' })
  return true
}

/** Closes the job's open halt with how it ended. */
export async function endHalt({ sql, jobId, actor, outcome }: { sql: Sql; jobId: string; actor: string; outcome: 'resumed' | 'cancelled' }): Promise<void> {
  await sql.query(`UPDATE replay_halts SET ended_at = now(), ended_by = $2, outcome = $3 WHERE job_id = $1::bigint AND ended_at IS NULL`, [jobId, actor, outcome])
}
