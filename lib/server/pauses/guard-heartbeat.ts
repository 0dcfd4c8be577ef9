import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

export type GuardHeartbeat = { vhost: string; queue: string; instance: string; guardVersion: string | null }

/**
 * Records that a guard polled (GET /api/pauses with `instance`): which guard, of which version, protects which queue,
 * and when it was last heard from. A guard polls every 30 s by default, so the row is written at most once a minute
 * per instance (the WHERE of the upsert): the list stays a read for the other polls. Returns whether a row was written.
 */
export async function recordGuardHeartbeat({ sql, beat }: { sql: Sql; beat: GuardHeartbeat }): Promise<boolean> {
  const { rows } = await sql.query<{ written: boolean }>(
    `INSERT INTO guard_heartbeats AS h (vhost, queue, instance, guard_version, first_seen_at, last_seen_at)
     VALUES ($1, $2, $3, $4, now(), now())
     ON CONFLICT (vhost, queue, instance) DO UPDATE SET last_seen_at = excluded.last_seen_at, guard_version = excluded.guard_version
     WHERE h.last_seen_at <= excluded.last_seen_at - interval '1 minute'
     RETURNING true AS written`,
    [beat.vhost, beat.queue, beat.instance, beat.guardVersion],
  )
  return rows.length > 0
}
