import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * Takes a vhost's scheduled run for this process, or says another has it: true when no process claimed the vhost, and
 * none read it successfully (a run asked for on the page included), within the last `withinMs`. One statement, so of
 * any number of processes asking at once exactly one gets it.
 */
export async function claimScheduledRun({ sql, vhost, withinMs }: { sql: Sql; vhost: string; withinMs: number }): Promise<boolean> {
  const { rows } = await sql.query<{ vhost: string }>(
    `INSERT INTO topology_runs AS r (vhost, claimed_at) VALUES ($1, now())
     ON CONFLICT (vhost) DO UPDATE SET claimed_at = now()
      WHERE (r.claimed_at IS NULL OR r.claimed_at <= now() - make_interval(secs => $2::float8 / 1000))
        AND (r.checked_at IS NULL OR r.checked_at <= now() - make_interval(secs => $2::float8 / 1000))
     RETURNING r.vhost`,
    [vhost, withinMs],
  )
  return rows.length === 1
}
