import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { RetentionStatusDto } from '@/lib/shared/schemas/retention'

export type { RetentionStatusDto }

const CAP = 100_000
const TABLES = ['dead_letters', 'dead_letter_states', 'dead_letter_search', 'error_groups', 'group_arrivals', 'group_source_stats', 'group_source_arrivals', 'replay_items', 'replay_jobs', 'audit_log', 'alert_events']

/** What the settings page shows about the store and what retention removes next. */
export async function getRetentionStatus({ db: { sql } }: { db: Db }): Promise<RetentionStatusDto> {
  const days = getConfig().LAZARUS_RETENTION_DAYS
  const cutoff = days > 0 ? new Date(Date.now() - days * 86_400_000) : null
  const eligible = (before: Date | null) =>
    before
      ? sql
          .query<{ n: number }>(
            `SELECT count(*)::int AS n FROM (SELECT 1 FROM dead_letter_states WHERE status IN ('replayed', 'resolved') AND status_changed_at < $1 LIMIT $2) capped`,
            [before, CAP],
          )
          .then((r) => r.rows[0]?.n ?? 0)
      : Promise.resolve(0)
  const [sizes, now, soon, run] = await Promise.all([
    sql.query<{ name: string; bytes: number; rows: number }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid)::float8 AS bytes, greatest(c.reltuples, 0)::float8 AS rows
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY($1::text[]) ORDER BY 2 DESC`,
      [TABLES],
    ),
    eligible(cutoff),
    eligible(cutoff ? new Date(cutoff.getTime() + 86_400_000) : null),
    sql.query<{ started_at: Date; finished_at: Date | null; deleted: number; error: string | null }>(
      'SELECT started_at, finished_at, deleted::float8 AS deleted, error FROM retention_runs ORDER BY id DESC LIMIT 1',
    ),
  ])
  const last = run.rows[0]
  return {
    retentionDays: days,
    store: { totalBytes: sizes.rows.reduce((sum, t) => sum + t.bytes, 0), tables: sizes.rows },
    eligibleNow: now,
    eligibleWithin24h: soon,
    cap: CAP,
    cutoff: cutoff?.toISOString() ?? null,
    lastRun: last ? { startedAt: last.started_at.toISOString(), finishedAt: last.finished_at?.toISOString() ?? null, deleted: last.deleted, error: last.error } : null,
  }
}
