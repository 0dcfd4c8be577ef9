import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { ListMessagesQuery, MessageListDto } from '@/lib/shared/schemas/message'
import { decodeCursor, encodeCursor, type Cursor } from '@/lib/server/platform/db/keyset-cursor'
import {
  afterCursorSql, fieldConditionSql, isIndexedEquality, listOrderSql, MESSAGES_FROM, messageFilterSql, rowSearchTextSql, searchPattern, termMatchesSql,
  type FieldMatching,
} from '@/lib/server/selection/message-filter-sql'
import { redactSummaryRow } from './redact-rows'
import { filtersMaskedText, idsMatchingRedacted, needsRedaction, type RedactedView } from './redacted-search'
import { SUMMARY_COLUMNS, toMessageSummary, type SummaryRow } from './to-message-dto'

/**
 * A text search, or a header or property equality, first walks the newest rows (after the other filters) in list
 * order: SEARCH_WINDOW of them, or up to MAX_SEARCH_WINDOW when the first window's matches predict that many suffice.
 * Sparser terms and values go to the indexes of dead_letter_search (trigram, header terms).
 */
export const SEARCH_WINDOW = 1_000
export const MAX_SEARCH_WINDOW = 10_000

export type ListMessagesOptions = {
  db: Db
  query: ListMessagesQuery
  searchWindow?: number
  maxSearchWindow?: number
  /** A caller who sees some sources' messages redacted: their rows are redacted, and text filters match the redacted text. */
  view?: RedactedView
} & SourceScope

/**
 * Newest failures first, keyset-paginated on (failed_at, id) so deep pages cost the same as the first. With
 * `sourceIds`, only those sources' messages, as if every filter included them.
 */
export async function listMessages({ db: { sql }, query, ...options }: ListMessagesOptions): Promise<MessageListDto> {
  const read: PageRead = { sql, query, cursor: query.cursor ? decodeCursor(query.cursor) : null, sourceIds: allowedSourceIds(options) }
  const rows = query.q || query.match?.some(isIndexedEquality)
    ? await searchPage({ ...read, window: options.searchWindow ?? SEARCH_WINDOW, maxWindow: options.maxSearchWindow ?? MAX_SEARCH_WINDOW })
    : await filteredPage(read)
  const examined = rows.slice(0, query.limit)
  const last = examined[examined.length - 1]
  const page = options.view ? await redactedPage({ sql, rows: examined, query, view: options.view }) : examined
  return {
    messages: page.map(toMessageSummary),
    nextCursor: rows.length > query.limit && last ? encodeCursor({ failedAt: new Date(last.failed_at).toISOString(), id: last.id }) : null,
  }
}

/**
 * Rows of sources the caller sees redacted: dropped when a text filter matched only inside a masked value (the page
 * may then be shorter than the limit; the cursor still moves past every row examined), redacted otherwise.
 */
async function redactedPage({ sql, rows, query, view }: { sql: Sql; rows: SummaryRow[]; query: ListMessagesQuery; view: RedactedView }): Promise<SummaryRow[]> {
  const redacted = rows.filter((r) => needsRedaction(view, r.source_id))
  if (redacted.length === 0) return rows
  const textFilter = filtersMaskedText(query)
  const matching = textFilter ? await idsMatchingRedacted({ sql, ids: redacted.map((r) => r.id), filter: query, redactor: view.redactor }) : null
  return rows
    .filter((r) => !matching || !needsRedaction(view, r.source_id) || matching.has(r.id))
    .map((r) => (needsRedaction(view, r.source_id) ? redactSummaryRow(r, view.redactor) : r))
}

function whereSql(query: ListMessagesQuery, cursor: Cursor | null, params: unknown[], sourceIds: string[] | null, fields: FieldMatching = 'index'): string {
  const where = messageFilterSql(query, params, sourceIds, fields)
  return cursor ? `${where} AND ${afterCursorSql(query, cursor, params)}` : where
}

/** What reading a page needs: the connection, the list's query, where the page starts, the caller's sources. */
type PageRead = { sql: Sql; query: ListMessagesQuery; cursor: Cursor | null; sourceIds: string[] | null }

/** Every filter but `q` leads an index ending in (failed_at DESC, id DESC): the page is one short index range. */
async function filteredPage({ sql, query, cursor, sourceIds }: PageRead): Promise<SummaryRow[]> {
  const params: unknown[] = []
  const where = whereSql(query, cursor, params, sourceIds)
  params.push(query.limit + 1)
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
     WHERE ${where} ORDER BY ${listOrderSql(query)} LIMIT $${params.length}`,
    params,
  )
  return rows
}

/**
 * A text search has two good plans and the planner cannot tell which applies: its estimate for ILIKE '%term%' is
 * coarse, and a wrong guess walked the failed_at index through most of a million rows for a rare term (2.5 s).
 * Walking the newest rows in list order answers a common term (or a narrow filter, with fewer rows than the walk)
 * after a few thousand rows; the trigram index answers a rare one by fetching every match and sorting them, which
 * costs a heap visit per match. The first window's matches estimate how far a walk must go; if that is too far,
 * the term is rare enough for the index. A header or property equality (`h.tenant=acme`) is read the same way, its
 * rare values through the header terms of dead_letter_search (docs/decisions/0013-header-terms-in-the-search-index.md).
 */
async function searchPage({ window, maxWindow, ...read }: PageRead & { window: number; maxWindow: number }): Promise<SummaryRow[]> {
  const { sql, query, cursor, sourceIds } = read
  const wanted = query.limit + 1
  let walk = await walkNewest({ ...read, window })
  // The index costs about one row read per match: a value with matches in the first window has enough of them that
  // a bounded walk is cheaper.
  if (walk.ids.length > 0 && walk.ids.length < wanted && walk.full) {
    const needed = Math.ceil(((window * wanted) / walk.ids.length) * 1.5)
    if (needed <= maxWindow) walk = await walkNewest({ ...read, window: needed })
  }
  let ids = walk.ids
  // A walk that ran out of rows saw everything there is; one that ran out of window did not.
  if (ids.length < wanted && walk.full && !query.q) ids = await indexedEqualityIds(read)
  else if (ids.length < wanted && walk.full) {
    const params: unknown[] = []
    const where = whereSql(query, cursor, params, sourceIds)
    params.push(wanted)
    // MATERIALIZED keeps ORDER BY ... LIMIT out of the scan, so the planner cannot fall back to walking failed_at.
    const { rows } = await sql.query<{ id: string }>(
      `WITH hits AS MATERIALIZED (SELECT d.id, d.failed_at FROM ${MESSAGES_FROM} WHERE ${where})
       SELECT id::text FROM hits ORDER BY failed_at DESC, id DESC LIMIT $${params.length}`,
      params,
    )
    ids = rows.map((r) => r.id)
  }
  if (ids.length === 0) return []
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
     WHERE d.id = ANY($1::bigint[]) ORDER BY d.failed_at DESC, d.id DESC`,
    [ids],
  )
  return rows
}

/**
 * A rare header or property value's page: the ids the header terms name (and the backlog's matching rows) that pass
 * the other filters, in list order, each checked against its stored values only until the page is full. Checking
 * after the sort (OFFSET 0 keeps the check out of the sorted subquery) reads a few rows' headers, not every match's;
 * the terms of values up to 64 characters are exact, so the check rarely drops one.
 */
async function indexedEqualityIds({ sql, query, cursor, sourceIds }: PageRead): Promise<string[]> {
  const match = query.match ?? []
  const params: unknown[] = []
  const where = whereSql({ ...query, match: match.filter((c) => !isIndexedEquality(c)) }, cursor, params, sourceIds)
  const terms = termMatchesSql(match.filter(isIndexedEquality), params)
  const check = match.filter(isIndexedEquality).map((c) => fieldConditionSql(c, params, 'checked')).join(' AND ')
  params.push(query.limit + 1)
  const { rows } = await sql.query<{ id: string }>(
    `WITH hits AS MATERIALIZED (SELECT d.id, d.failed_at FROM ${MESSAGES_FROM} WHERE ${where} AND d.id IN (${terms}))
     SELECT id::text FROM (SELECT id, failed_at FROM hits ORDER BY failed_at DESC, id DESC OFFSET 0) sorted
     WHERE (SELECT ${check} FROM dead_letters checked WHERE checked.id = sorted.id)
     LIMIT $${params.length}`,
    params,
  )
  return rows.map((r) => r.id)
}

/**
 * The first limit + 1 matches among the newest `window` rows that pass the other filters: a match holds the text
 * search and the header and property equalities, each checked on the row. The scan stops at the last match it
 * needs; the window's last row comes back as well (when reached), which says the window was full.
 */
async function walkNewest({ sql, query, cursor, sourceIds, window }: PageRead & { window: number }): Promise<{ ids: string[]; full: boolean }> {
  const params: unknown[] = []
  const match = query.match ?? []
  const where = whereSql({ ...query, q: undefined, match: match.filter((c) => !isIndexedEquality(c)) }, cursor, params, sourceIds)
  const tests = match.filter(isIndexedEquality).map((c) => fieldConditionSql(c, params))
  if (query.q) {
    params.push(searchPattern(query.q))
    tests.push(`${rowSearchTextSql('d', 'ds')} ILIKE $${params.length}`)
  }
  params.push(window, query.limit + 1)
  const n = params.length
  // A page without text search leaves dead_letter_search out; with one, its rows still in the backlog have none yet.
  const searchJoin = query.q ? 'LEFT JOIN dead_letter_search ds ON ds.dead_letter_id = d.id' : ''
  const { rows } = await sql.query<{ id: string; hit: boolean; position: number }>(
    `SELECT id::text, hit, position::int FROM (
       SELECT d.id, coalesce(${tests.join(' AND ')}, false) AS hit, row_number() OVER (ORDER BY ${listOrderSql(query)}) AS position
       FROM ${MESSAGES_FROM} ${searchJoin}
       WHERE ${where} ORDER BY ${listOrderSql(query)} LIMIT $${n - 1}
     ) recent
     WHERE hit OR position = $${n - 1}
     LIMIT $${n}`,
    params,
  )
  return { ids: rows.filter((r) => r.hit).map((r) => r.id), full: rows.some((r) => r.position === window) }
}
