import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * The SQL of a group's triage state (status, note, ticket link). Reading groups has its own query modules, each built
 * around the indexes it uses: the list and detail rows (query-groups.ts), the arrival series (arrival-series.ts) and
 * the breakdown of a group's messages (group-breakdown.ts).
 */

export type GroupTriage = { status: string; note: string | null; ticket_url: string | null }

/** Whether any of `sourceIds` holds a message of the group (its per-source counters). */
export async function groupHasMessagesIn({ sql, groupId, sourceIds }: { sql: Sql; groupId: string; sourceIds: string[] }): Promise<boolean> {
  const { rows } = await sql.query('SELECT 1 FROM group_source_stats WHERE group_id = $1::bigint AND source_id = ANY($2::bigint[]) AND count > 0 LIMIT 1', [groupId, sourceIds])
  return rows.length > 0
}

/** The group's triage state and title, locked until the transaction ends; undefined when there is no such group. */
export async function lockGroupTriage({ sql, groupId }: { sql: Sql; groupId: string }): Promise<(GroupTriage & { title: string }) | undefined> {
  const { rows } = await sql.query<GroupTriage & { title: string }>('SELECT status, note, ticket_url, title FROM error_groups WHERE id = $1::bigint FOR UPDATE', [groupId])
  return rows[0]
}

export async function setGroupTriage({ sql, groupId, triage }: { sql: Sql; groupId: string; triage: GroupTriage }): Promise<void> {
  await sql.query('UPDATE error_groups SET status = $2, note = $3, ticket_url = $4, updated_at = now() WHERE id = $1::bigint', [
    groupId, triage.status, triage.note, triage.ticket_url,
  ])
}

/**
 * Group counters move with message status, in the same transaction: the group's and the group's in each source
 * (group_source_stats). Group rows are locked in id order first (no deadlocks with ingestion, which takes the same
 * locks before it writes either).
 */
export async function addGroupCounts({ sql, column, moved }: { sql: Sql; column: 'replayed_count' | 'resolved_count'; moved: { group_id: string; source_id: string; n: number }[] }): Promise<void> {
  if (moved.length === 0) return
  const perGroup = new Map<string, number>()
  for (const m of moved) perGroup.set(m.group_id, (perGroup.get(m.group_id) ?? 0) + m.n)
  const ids = [...perGroup.keys()]
  await sql.query('SELECT id FROM error_groups WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [ids])
  await sql.query(
    `WITH per_source AS (
       UPDATE group_source_stats s SET ${column} = s.${column} + x.n
       FROM unnest($3::bigint[], $4::bigint[], $5::int[]) AS x(group_id, source_id, n) WHERE s.group_id = x.group_id AND s.source_id = x.source_id
       RETURNING 1
     )
     UPDATE error_groups g SET ${column} = g.${column} + x.n, updated_at = now()
     FROM unnest($1::bigint[], $2::int[]) AS x(id, n) WHERE g.id = x.id`,
    [ids, [...perGroup.values()], moved.map((m) => m.group_id), moved.map((m) => m.source_id), moved.map((m) => m.n)],
  )
}
