import 'server-only'
import { getDb } from '@/lib/server/db'
import type { Sql } from '@/lib/server/db/sql'
import type { MessageCountDto, MessageFilter } from '@/lib/shared/schemas/message'
import { MESSAGES_FROM, messageFilterSql } from './message-filter-sql'

/** Counted exactly up to here; beyond it a count(*) of a broad filter can take seconds (product.md §11). */
export const EXACT_COUNT_CAP = 10_000

/**
 * How many messages match a filter, for "select all N matching": exact below the cap (the scan stops after
 * EXACT_COUNT_CAP + 1 rows), else a maintained counter when the filter is only a group or nothing, else the
 * planner's row estimate, never below what the capped scan already saw.
 */
export async function countMessages(filter: MessageFilter): Promise<MessageCountDto> {
  const { sql } = await getDb()
  const params: unknown[] = []
  const where = messageFilterSql(filter, params)
  params.push(EXACT_COUNT_CAP + 1)
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${MESSAGES_FROM} WHERE ${where} LIMIT $${params.length}) capped`,
    params,
  )
  const exact = rows[0]?.n ?? 0
  if (exact <= EXACT_COUNT_CAP) return { count: exact, estimated: false, method: 'exact' }

  // Counters are kept in the ingesting transaction, but retention or deletes may bypass them: labelled estimates.
  const used = Object.entries(filter).filter(([, value]) => value !== undefined).map(([key]) => key)
  const counter = used.length === 0 ? await storedCount(sql) : used.length === 1 && filter.group ? await groupCount(sql, filter.group) : null
  if (counter !== null) return { count: Math.max(counter, exact), estimated: true, method: 'counter' }
  return { count: Math.max(await plannerEstimate(sql, where, params.slice(0, -1)), exact), estimated: true, method: 'planner' }
}

async function storedCount(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT coalesce(sum(drained_count), 0)::float8 AS n FROM sources')
  return rows[0]?.n ?? 0
}

async function groupCount(sql: Sql, groupId: string): Promise<number | null> {
  const { rows } = await sql.query<{ n: number }>('SELECT count::float8 AS n FROM error_groups WHERE id = $1::bigint', [groupId])
  return rows[0]?.n ?? null
}

type ExplainRow = { 'QUERY PLAN': string | { Plan: { 'Plan Rows': number } }[] }

async function plannerEstimate(sql: Sql, where: string, params: unknown[]): Promise<number> {
  const { rows } = await sql.query<ExplainRow>(`EXPLAIN (FORMAT JSON) SELECT 1 FROM ${MESSAGES_FROM} WHERE ${where}`, params)
  const raw = rows[0]?.['QUERY PLAN']
  const plan = typeof raw === 'string' ? (JSON.parse(raw) as Exclude<ExplainRow['QUERY PLAN'], string>) : raw
  return Math.round(plan?.[0]?.Plan['Plan Rows'] ?? 0)
}
