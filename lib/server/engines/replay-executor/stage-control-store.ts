import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { HaltDecision } from '@/lib/server/replay/halt-decision'
import { transitionReplayJob } from '@/lib/server/replay/transition-replay-job'
import { SYSTEM_ACTOR } from '@/lib/server/engines/release/release-stragglers'

/** The SQL of stage-control.ts, the executor's side of staged jobs: their stage, windows, halts and halt timeouts. */

export type StageRow = {
  stage_bounds: number[]
  stage: number
  stage_published_at: Date | null
  window_ms: number
  halt_share: number
  halt_min: number
  claimed_through: number
  /** now() on the database, so windows are measured on one clock whichever process runs the job. */
  now: Date
}

export async function readStage({ sql, jobId }: { sql: Sql; jobId: string }): Promise<StageRow | null> {
  const { rows } = await sql.query<StageRow>(
    `SELECT stage_bounds, stage, stage_published_at, coalesce(window_ms, 0) AS window_ms, coalesce(halt_share, 1) AS halt_share,
       coalesce(halt_min, 1) AS halt_min, claimed_through, now() AS now
     FROM replay_jobs WHERE id = $1::bigint AND stage_bounds IS NOT NULL`,
    [jobId],
  )
  return rows[0] ?? null
}

const logEntry = (stage: number, field: 'startedAt' | 'publishedAt') => `jsonb_build_object('stage', ${stage}, '${field}', now())`

/** Every item of the current stage had its outcome: its window starts now (kept if already set: a second run after a crash). */
export async function markStagePublished({ sql, jobId, owner, stage }: { sql: Sql; jobId: string; owner: string; stage: number }): Promise<void> {
  await sql.query(
    `UPDATE replay_jobs SET stage_published_at = now(), updated_at = now(),
       stage_log = stage_log || ${logEntry(stage, 'publishedAt')}
     WHERE id = $1::bigint AND lease_owner = $2 AND stage = $3 AND stage_published_at IS NULL`,
    [jobId, owner, stage],
  )
}

/** The window passed without a halt: the next stage may publish. Returns false when the lease was lost. */
export async function advanceStage({ sql, jobId, owner, from }: { sql: Sql; jobId: string; owner: string; from: number }): Promise<boolean> {
  const changed = await sql.execute(
    `UPDATE replay_jobs SET stage = stage + 1, stage_published_at = NULL, updated_at = now(),
       stage_log = stage_log || ${logEntry(from + 1, 'startedAt')}
     WHERE id = $1::bigint AND lease_owner = $2 AND stage = $3`,
    [jobId, owner, from],
  )
  return changed > 0
}

/** Gives the lease back until `until` (a stage's window): claimJob leaves the job alone till then. */
export async function deferJob({ sql, jobId, owner, until }: { sql: Sql; jobId: string; owner: string; until: Date }): Promise<void> {
  await sql.query(
    `UPDATE replay_jobs SET not_before = $3, lease_owner = NULL, lease_expires_at = NULL, current_rate = NULL, updated_at = now()
     WHERE id = $1::bigint AND lease_owner = $2`,
    [jobId, owner, until],
  )
}

/**
 * Halts the job, durably and once: status 'halted', the halt and its evidence (which the alert evaluator turns into a
 * replay-halted alert), the audit entry, one transaction. The run keeps its lease until it has written the outcomes
 * it is owed, then gives it back; claimJob never takes a halted job. False when the job was not this run's to halt
 * (lease lost, cancelled meanwhile).
 */
export async function haltJob({ sql, jobId, owner, decision }: { sql: Sql; jobId: string; owner: string; decision: HaltDecision }): Promise<boolean> {
  return sql.transaction(async (tx) => {
    const { rows } = await transitionReplayJob<{ created_by: string; total: number }>({
      sql: tx,
      event: 'halt',
      set: 'halted_at = now(), not_before = NULL',
      where: 'j.id = $1::bigint AND j.lease_owner = $2 AND j.cancel_requested_at IS NULL',
      params: [jobId, owner],
      returning: 'j.created_by, j.total',
    })
    if (rows.length === 0) return false
    await tx.query('INSERT INTO replay_halts (job_id, stage, reason, evidence) VALUES ($1::bigint, $2, $3, $4::jsonb)', [
      jobId, decision.stage, decision.reason, JSON.stringify(decision.evidence),
    ])
    const e = decision.evidence
    const stage = decision.stage === 0 ? 'the canary' : `stage ${decision.stage + 1}`
    const why = decision.reason === 'new-group'
      ? `a replayed copy failed again in a new error group (${e.newGroups.map((g) => `“${g.title}”`).join(', ')})`
      : `${e.refailed} of ${e.published} replayed messages in ${stage} failed again (${e.sharePercent} %, threshold ${e.haltPercent} % and at least ${e.haltMinMessages})`
    await recordAudit({
      sql: tx,
      actor: SYSTEM_ACTOR,
      action: 'replay.halted',
      subject: { type: 'replay', id: jobId },
      summary: `Replay ${jobId} halted in ${stage}: ${why}`,
      details: { stage: decision.stage, reason: decision.reason, evidence: decision.evidence, requestedBy: rows[0].created_by },
      outcome: 'halted',
    })
    return true
  })
}

/**
 * Cancels the jobs halted longer than `timeoutMs`: each is handed back to the executor as cancelled (status running,
 * cancel requested), which closes its unpublished items (back to dead), releases what its pauses held and ends them,
 * as an operator's cancel does. The halt and the audit entry say it timed out. Returns the job ids.
 */
export async function expireHaltedJobs({ sql, timeoutMs }: { sql: Sql; timeoutMs: number }): Promise<string[]> {
  return sql.transaction(async (tx) => {
    const { rows } = await transitionReplayJob<{ id: string; halted_at: Date }>({
      sql: tx,
      event: 'halt-timeout',
      set: 'cancel_requested_at = now(), cancel_requested_by = $2, not_before = NULL',
      where: `j.id IN (SELECT id FROM replay_jobs WHERE status = 'halted' AND halted_at < now() - $1::int * interval '1 millisecond' ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)`,
      params: [timeoutMs, SYSTEM_ACTOR],
      returning: 'j.id::text, j.halted_at',
    })
    for (const job of rows) {
      await tx.query(`UPDATE replay_halts SET ended_at = now(), ended_by = $2, outcome = 'timed-out' WHERE job_id = $1::bigint AND ended_at IS NULL`, [job.id, SYSTEM_ACTOR])
      await recordAudit({
        sql: tx,
        actor: SYSTEM_ACTOR,
        action: 'replay.halt-timed-out',
        subject: { type: 'replay', id: job.id },
        summary: `Replay ${job.id} cancelled: halted for longer than ${Math.round(timeoutMs / 60_000)} min without a resume; its unpublished messages go back to dead`,
        details: { haltedAt: new Date(job.halted_at).toISOString(), timeoutMinutes: timeoutMs / 60_000 },
        outcome: 'cancelled',
      })
    }
    return rows.map((r) => r.id)
  })
}
