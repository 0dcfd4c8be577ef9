import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/** Retention's SQL: its run records, and deleting one batch of expired messages with their counters. */

// The oldest eligible rows, through dead_letter_states_retention_idx; SKIP LOCKED so two workers share the work.
// Dead and held rows are never touched: the status predicate is the partial index's own. A message goes with its
// status row and its search row, in one statement.
const DELETE_BATCH = `
WITH doomed AS (
  DELETE FROM dead_letter_states st
  WHERE st.dead_letter_id IN (
    SELECT dead_letter_id FROM dead_letter_states
    WHERE status IN ('replayed', 'resolved') AND status_changed_at < $1
    ORDER BY status_changed_at, dead_letter_id LIMIT $2
    FOR UPDATE SKIP LOCKED
  ) AND st.status IN ('replayed', 'resolved')
  RETURNING st.dead_letter_id AS id, st.status
),
gone AS (
  DELETE FROM dead_letters d USING doomed WHERE d.id = doomed.id
  RETURNING d.id, d.group_id, d.source_id, doomed.status
),
unindexed AS (
  DELETE FROM dead_letter_search s USING gone WHERE s.dead_letter_id = gone.id
  RETURNING 1
)
SELECT group_id::text, source_id::text,
  (count(*) FILTER (WHERE status = 'replayed'))::int AS replayed,
  (count(*) FILTER (WHERE status = 'resolved'))::int AS resolved
FROM gone GROUP BY group_id, source_id ORDER BY group_id, source_id`

// Per group and per (group, source): the same decrements, each counter never below zero.
const LOWER_COUNTERS = `
WITH removed AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::int[]) AS r(group_id, source_id, replayed, resolved)
),
per_source AS (
  UPDATE group_source_stats s SET
    count = greatest(s.count - (r.replayed + r.resolved), 0),
    replayed_count = greatest(s.replayed_count - r.replayed, 0),
    resolved_count = greatest(s.resolved_count - r.resolved, 0)
  FROM removed r WHERE s.group_id = r.group_id AND s.source_id = r.source_id
  RETURNING 1
)
UPDATE error_groups g SET
  count = greatest(g.count - (r.replayed + r.resolved), 0),
  replayed_count = greatest(g.replayed_count - r.replayed, 0),
  resolved_count = greatest(g.resolved_count - r.resolved, 0)
FROM (SELECT group_id, sum(replayed)::int AS replayed, sum(resolved)::int AS resolved FROM removed GROUP BY 1) r
WHERE g.id = r.group_id`

/** Records a run's start (retention_runs, shown on the settings page); returns its id. */
export async function openRetentionRun({ sql, cutoff }: { sql: Sql; cutoff: Date }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>('INSERT INTO retention_runs (cutoff) VALUES ($1) RETURNING id::text', [cutoff])
  return rows[0].id
}

/** Records a run's end: how many messages it deleted, and the error it stopped on, if any. */
export async function closeRetentionRun({ sql, runId, deleted, error = null }: { sql: Sql; runId: string; deleted: number; error?: string | null }): Promise<void> {
  await sql.query('UPDATE retention_runs SET finished_at = now(), deleted = $2, error = $3 WHERE id = $1::bigint', [runId, deleted, error])
}

/**
 * Deletes up to `batchSize` replayed and resolved messages whose status changed before `cutoff`, with their status
 * and search rows, and lowers their groups' counters, in one transaction. Returns how many went.
 */
export async function deleteExpiredBatch({ sql, cutoff, batchSize }: { sql: Sql; cutoff: Date; batchSize: number }): Promise<number> {
  return sql.transaction(async (tx) => {
    const { rows } = await tx.query<{ group_id: string; source_id: string; replayed: number; resolved: number }>(DELETE_BATCH, [cutoff, batchSize])
    if (rows.length > 0) {
      // Group rows in id order, as the drainer locks them, so the two never deadlock.
      await tx.query('SELECT id FROM error_groups WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [[...new Set(rows.map((r) => r.group_id))]])
      await tx.query(LOWER_COUNTERS, [rows.map((r) => r.group_id), rows.map((r) => r.source_id), rows.map((r) => r.replayed), rows.map((r) => r.resolved)])
    }
    return rows.reduce((sum, r) => sum + r.replayed + r.resolved, 0)
  })
}
