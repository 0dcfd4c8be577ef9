import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/** Whether some process read this vhost successfully within the last `withinMs`. */
export async function recentlyChecked({ sql, vhost, withinMs }: { sql: Sql; vhost: string; withinMs: number }): Promise<boolean> {
  const { rows } = await sql.query<{ fresh: boolean }>(
    `SELECT checked_at > now() - make_interval(secs => $2::float8 / 1000) AS fresh FROM topology_runs WHERE vhost = $1`,
    [vhost, withinMs],
  )
  return rows[0]?.fresh === true
}
