import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/** The search indexer's SQL: the backlog of stored-but-unindexed id ranges, and indexing them. */

export type IndexSearchBacklogOptions = {
  sql: Sql
  /** Ranges taken per transaction; the drainer writes one per stored batch (500 rows by default). */
  ranges?: number
}

export type IndexSearchBacklogResult = { ranges: number; rows: number; more: boolean }

/**
 * Indexes the oldest stored-but-unindexed id ranges in one transaction: their backlog rows go and their search rows
 * appear together, so a concurrent search sees each message exactly one way. SKIP LOCKED lets several workers
 * index side by side without taking the same ranges.
 */
export async function indexSearchBacklog({ sql, ranges = 8 }: IndexSearchBacklogOptions): Promise<IndexSearchBacklogResult> {
  return sql.transaction(async (tx) => {
    const { rows: taken } = await tx.query<{ first_id: string; last_id: string }>(
      `DELETE FROM search_backlog WHERE id IN (SELECT id FROM search_backlog ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING first_id::text, last_id::text`,
      [ranges],
    )
    if (taken.length === 0) return { ranges: 0, rows: 0, more: false }
    // Ranges can overlap: a drainer writes two batches at once, so their ids interleave. Each row is indexed once.
    // With its text go its header, property and JSON body equality terms (dead_letter_terms_v2, migrations
    // 20261208000000_header_terms and 20261215000000_body_field_terms), which the filters h.<name>=…, p.<name>=… and
    // b.<pointer>=… look up.
    const indexed = await tx.execute(
      `INSERT INTO dead_letter_search (dead_letter_id, text, terms)
       SELECT DISTINCT ON (d.id) d.id, dead_letter_search_text_v2(d.error_type, d.error_message, d.entity_key, d.body_preview),
         dead_letter_terms_v2(d.headers, d.properties, d.body, d.body_encoding, d.body_size)
       FROM unnest($1::bigint[], $2::bigint[]) AS r(first_id, last_id)
       JOIN dead_letters d ON d.id BETWEEN r.first_id AND r.last_id
       ORDER BY d.id
       ON CONFLICT (dead_letter_id) DO UPDATE SET text = excluded.text, terms = excluded.terms`,
      [taken.map((r) => r.first_id), taken.map((r) => r.last_id)],
    )
    return { ranges: taken.length, rows: indexed, more: taken.length === ranges }
  })
}

/** How far behind the search index is: unindexed ranges and an upper bound of the rows in them. */
export async function searchBacklogSize({ sql }: { sql: Sql }): Promise<{ ranges: number; ids: number }> {
  const { rows } = await sql.query<{ ranges: number; ids: number }>(
    'SELECT count(*)::int AS ranges, coalesce(sum(last_id - first_id + 1), 0)::float8 AS ids FROM search_backlog',
  )
  return rows[0] ?? { ranges: 0, ids: 0 }
}

/** The newest unindexed range (null: none) and an upper bound of the unindexed rows: whether the drainer is still storing. */
export async function searchBacklogTip({ sql }: { sql: Sql }): Promise<{ newest: string | null; ids: number }> {
  const { rows } = await sql.query<{ newest: string | null; ids: number }>(
    'SELECT max(id)::text AS newest, coalesce(sum(last_id - first_id + 1), 0)::float8 AS ids FROM search_backlog',
  )
  return rows[0] ?? { newest: null, ids: 0 }
}
