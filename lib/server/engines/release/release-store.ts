import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { HOLD_QUEUE } from '@/packages/guard/src/protocol'
import { claimHeldRows, notCoveredByOtherPause, type HeldRow } from '@/lib/server/pauses/release-items'

/**
 * The release engine's own SQL: the hold source, the straggler sweep's pick, and a replay job's pauses as the job
 * ends. Which held rows may go back at all (never a flagged row, never one another open pause still covers, each by
 * one job only) is the pause domain's rule, shared with an operator's resume: lib/server/pauses/release-items.ts.
 */

/** Registers lazarus.hold as a source of kind 'hold' (the drainer stores its deliveries with status 'held'). */
export async function registerHoldSource({ sql, vhost, queue = HOLD_QUEUE }: { sql: Sql; vhost: string; queue?: string }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO sources (vhost, queue, kind) VALUES ($1, $2, 'hold')
     ON CONFLICT (vhost, queue) DO UPDATE SET kind = 'hold' RETURNING id::text`,
    [vhost, queue],
  )
  return rows[0].id
}

/**
 * Takes (held → replaying) held rows that no open pause covers, unless a release of them failed less than
 * `retryAfterSeconds` ago (it left them held with the reason).
 */
export async function claimStragglers({ sql, actor, retryAfterSeconds, limit }: { sql: Sql; actor: string; retryAfterSeconds: number; limit: number }): Promise<HeldRow[]> {
  return claimHeldRows({
    sql,
    where: `NOT EXISTS (SELECT 1 FROM pauses p WHERE p.status <> 'resumed' AND p.vhost = s.vhost AND p.queue = d.held_from
              AND (p.entity_key IS NULL OR d.entity_key = p.entity_key))
            AND (st.status_reason IS NULL OR st.status_changed_at < now() - $1::int * interval '1 second')`,
    params: [retryAfterSeconds],
    actor,
    limit,
  })
}

/** Marks a job's open pauses 'releasing'; returns how many there were. */
export async function markJobPausesReleasing({ sql, jobId }: { sql: Sql; jobId: string }): Promise<number> {
  return sql.execute(`UPDATE pauses SET status = 'releasing' WHERE replay_job_id = $1::bigint AND status <> 'resumed'`, [jobId])
}

/** The job's creator, the actor of its releases (a job deleted meanwhile: Lazarus itself). */
export async function jobCreator({ sql, jobId }: { sql: Sql; jobId: string }): Promise<string> {
  const { rows } = await sql.query<{ created_by: string }>('SELECT created_by FROM replay_jobs WHERE id = $1::bigint', [jobId])
  return rows[0]?.created_by ?? 'lazarus'
}

/** Takes (held → replaying) the rows held under the job's open pauses that no other open pause covers. */
export async function claimHeldUnderJobPauses({ sql, jobId, actor }: { sql: Sql; jobId: string; actor: string }): Promise<HeldRow[]> {
  return claimHeldRows({
    sql,
    where: `EXISTS (SELECT 1 FROM pauses p WHERE p.replay_job_id = $1::bigint AND p.status <> 'resumed'
              AND p.vhost = s.vhost AND p.queue = d.held_from AND (p.entity_key IS NULL OR d.entity_key = p.entity_key))
            AND ${notCoveredByOtherPause('o.replay_job_id IS NOT DISTINCT FROM $1::bigint')}`,
    params: [jobId],
    actor,
  })
}

/** Locks the job's pauses that are not resumed yet, in id order, and returns their ids. */
export async function lockOpenJobPauses({ sql, jobId }: { sql: Sql; jobId: string }): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `SELECT id::text FROM pauses WHERE replay_job_id = $1::bigint AND status <> 'resumed' ORDER BY id FOR UPDATE`,
    [jobId],
  )
  return rows.map((r) => r.id)
}
