import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { MessageCountDto } from '@/lib/shared/schemas/message'
import type { MessageFilter } from '@/lib/shared/schemas/message-filter'
import { isIndexedEquality, MESSAGES_FROM, messageFilterSql, termMatchesSql, type FieldMatching } from '@/lib/server/selection/message-filter-sql'
import { filtersMaskedText, idsMatchingRedacted, needsRedaction, type RedactedView } from './redacted-search'

/**
 * Counted exactly up to here; beyond it a count(*) of a broad filter can take seconds
 * (docs/ARCHITECTURE.md#counters-instead-of-counting).
 */
export const EXACT_COUNT_CAP = 10_000

/**
 * How many messages match a filter, for "select all N matching": exact below the cap (the scan stops after
 * EXACT_COUNT_CAP + 1 rows), else a maintained counter when the filter is only a group or nothing, else the
 * planner's row estimate, never below what the capped scan already saw. With `scope.sourceIds`, only those sources'
 * messages, and their counters (drained counts, per-source group counts).
 */
export type CountMessagesOptions = {
  db: Db
  filter: MessageFilter
  view?: RedactedView
  /** Counted exactly up to here (EXACT_COUNT_CAP; smaller in tests). */
  exactCap?: number
} & SourceScope

export async function countMessages({ db: { sql }, filter, view, exactCap = EXACT_COUNT_CAP, ...scope }: CountMessagesOptions): Promise<MessageCountDto> {
  const sourceIds = allowedSourceIds(scope)
  const params: unknown[] = []
  const where = messageFilterSql(filter, params, sourceIds, await equalityMatching({ sql, filter, exactCap }))
  if (view && view.rawSourceIds !== null && filtersMaskedText(filter)) {
    return countRedacted({ sql, where, params, filter, view })
  }
  params.push(exactCap + 1)
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${MESSAGES_FROM} WHERE ${where} LIMIT $${params.length}) capped`,
    params,
  )
  const exact = rows[0]?.n ?? 0
  if (exact <= exactCap) return { count: exact, estimated: false, method: 'exact' }

  // Counters are kept in the ingesting transaction, but retention or deletes may bypass them: labelled estimates.
  const used = Object.entries(filter).filter(([, value]) => value !== undefined).map(([key]) => key)
  const counter = used.length === 0 ? await storedCount({ sql, sourceIds }) : used.length === 1 && filter.group ? await groupCount({ sql, groupId: filter.group, sourceIds }) : null
  if (counter !== null) return { count: Math.max(counter, exact), estimated: true, method: 'counter' }
  return { count: Math.max(await plannerEstimate({ sql, where, params: params.slice(0, -1) }), exact), estimated: true, method: 'planner' }
}

/**
 * How a count reads header and property equalities (docs/decisions/0013-header-terms-in-the-search-index.md). The
 * header terms name a rare value's few messages at once; a common value's hundreds of thousands would all be read
 * before the cap applies, where checking rows as the capped scan walks them stops at EXACT_COUNT_CAP + 1 matches. So
 * the terms decide: past the cap they say the value is common, and the rows are checked one by one.
 */
async function equalityMatching({ sql, filter, exactCap }: { sql: Sql; filter: MessageFilter; exactCap: number }): Promise<FieldMatching> {
  const equalities = (filter.match ?? []).filter(isIndexedEquality)
  if (equalities.length === 0) return 'index'
  const params: unknown[] = []
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (${termMatchesSql(equalities, params)} LIMIT ${exactCap + 1}) capped`,
    params,
  )
  return (rows[0]?.n ?? 0) > exactCap ? 'per-row' : 'index'
}

/** Counted among this many candidates when each must be checked against the redacted text. */
export const REDACTED_COUNT_CAP = 2_000

/**
 * A text-filtered count for a caller who sees some sources redacted: each candidate of such a source counts only if
 * the filter still matches its redacted text (redacted-search.ts), so the count is no oracle either. Past
 * REDACTED_COUNT_CAP candidates the figure is a labelled lower bound.
 */
/** A WHERE over MESSAGES_FROM, numbered against `params`. */
type Where = { sql: Sql; where: string; params: unknown[] }

async function countRedacted({ sql, where, params, filter, view }: Where & { filter: MessageFilter; view: RedactedView }): Promise<MessageCountDto> {
  const { rows } = await sql.query<{ id: string; source_id: string }>(
    `SELECT d.id::text, d.source_id::text FROM ${MESSAGES_FROM} WHERE ${where} LIMIT ${REDACTED_COUNT_CAP + 1}`,
    params,
  )
  const candidates = rows.slice(0, REDACTED_COUNT_CAP)
  const checked = candidates.filter((r) => needsRedaction(view, r.source_id))
  const matching = await idsMatchingRedacted({ sql, ids: checked.map((r) => r.id), filter, redactor: view.redactor })
  const count = candidates.length - checked.length + matching.size
  return rows.length > REDACTED_COUNT_CAP ? { count, estimated: true, method: 'planner' } : { count, estimated: false, method: 'exact' }
}

async function storedCount({ sql, sourceIds }: { sql: Sql; sourceIds: string[] | null }): Promise<number> {
  const { rows } = sourceIds
    ? await sql.query<{ n: number }>('SELECT coalesce(sum(drained_count), 0)::float8 AS n FROM sources WHERE id = ANY($1::bigint[])', [sourceIds])
    : await sql.query<{ n: number }>('SELECT coalesce(sum(drained_count), 0)::float8 AS n FROM sources')
  return rows[0]?.n ?? 0
}

async function groupCount({ sql, groupId, sourceIds }: { sql: Sql; groupId: string; sourceIds: string[] | null }): Promise<number | null> {
  const { rows } = sourceIds
    ? await sql.query<{ n: number }>(
      'SELECT sum(count)::float8 AS n FROM group_source_stats WHERE group_id = $1::bigint AND source_id = ANY($2::bigint[])',
      [groupId, sourceIds],
    )
    : await sql.query<{ n: number }>('SELECT count::float8 AS n FROM error_groups WHERE id = $1::bigint', [groupId])
  return rows[0]?.n ?? null
}

type ExplainRow = { 'QUERY PLAN': string | { Plan: { 'Plan Rows': number } }[] }

async function plannerEstimate({ sql, where, params }: Where): Promise<number> {
  const { rows } = await sql.query<ExplainRow>(`EXPLAIN (FORMAT JSON) SELECT 1 FROM ${MESSAGES_FROM} WHERE ${where}`, params)
  const raw = rows[0]?.['QUERY PLAN']
  const plan = typeof raw === 'string' ? (JSON.parse(raw) as Exclude<ExplainRow['QUERY PLAN'], string>) : raw
  return Math.round(plan?.[0]?.Plan['Plan Rows'] ?? 0)
}
