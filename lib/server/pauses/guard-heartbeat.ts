import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

export type GuardHeartbeat = { vhost: string; queue: string; instance: string; guardVersion: string | null; registryVersion?: number | null }

/**
 * Records that a guard polled (GET /api/pauses with `instance`): which guard, of which version, protects which queue,
 * and when it was last heard from. A guard polls every 30 s by default, so the row is written at most once a minute
 * per instance (the WHERE of the upsert): the list stays a read for the other polls, except the poll that reports a
 * new registry version held, which is written at once (docs/ARCHITECTURE.md#pause-hold-release, "Who listens").
 * Returns whether a row was written.
 */
export async function recordGuardHeartbeat({ sql, beat }: { sql: Sql; beat: GuardHeartbeat }): Promise<boolean> {
  const { rows } = await sql.query<{ written: boolean }>(
    `INSERT INTO guard_heartbeats AS h (vhost, queue, instance, guard_version, registry_version, first_seen_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $5::bigint, now(), now())
     ON CONFLICT (vhost, queue, instance) DO UPDATE
       SET last_seen_at = excluded.last_seen_at, guard_version = excluded.guard_version, registry_version = excluded.registry_version
     WHERE h.last_seen_at <= excluded.last_seen_at - interval '1 minute' OR h.registry_version IS DISTINCT FROM excluded.registry_version
     RETURNING true AS written`,
    [beat.vhost, beat.queue, beat.instance, beat.guardVersion, beat.registryVersion ?? null],
  )
  return rows.length > 0
}

/** A guard that polled within this long listens: it polls every 30 s, and its row is written at most once a minute. */
const LISTENING_WITHIN = '2 minutes'

type GuardCountRow = { vhost: string; queue: string; listening: number; up_to_date: number }

/**
 * Per queue: the guards that polled recently, and those of them that hold every change of the queue's pauses (the
 * registry version they reported is at least the newest version a pause of that queue took).
 */
export async function countGuards({ sql, queues }: { sql: Sql; queues: { vhost: string; queue: string }[] }): Promise<GuardCountRow[]> {
  if (queues.length === 0) return []
  const { rows } = await sql.query<GuardCountRow>(
    `SELECT q.vhost, q.queue,
       count(h.instance)::int AS listening,
       count(h.instance) FILTER (WHERE h.registry_version >= coalesce(v.latest, 0))::int AS up_to_date
     FROM unnest($1::text[], $2::text[]) AS q(vhost, queue)
     LEFT JOIN guard_heartbeats h ON h.vhost = q.vhost AND h.queue = q.queue AND h.last_seen_at > now() - interval '${LISTENING_WITHIN}'
     LEFT JOIN LATERAL (SELECT max(p.version) AS latest FROM pauses p WHERE p.vhost = q.vhost AND p.queue = q.queue) v ON true
     GROUP BY q.vhost, q.queue, v.latest`,
    [queues.map((q) => q.vhost), queues.map((q) => q.queue)],
  )
  return rows
}
