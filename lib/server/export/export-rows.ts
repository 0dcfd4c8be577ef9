import 'server-only'
import { createHash } from 'node:crypto'
import type { Sql } from '@/lib/server/platform/db/sql'
import { afterCursorSql, keysetSql, listOrderSql, MESSAGES_FROM, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { selectionFilter, selectionSql } from '@/lib/server/selection/selection-sql'
import type { SourceScope } from '@/lib/server/sources/source-scope'
import type { Selection } from '@/lib/shared/schemas/selection'

/**
 * Every stored column of a dead letter, plus its source queue and group title. Timestamps are ISO 8601 text with the
 * database's full microsecond precision (the keyset cursor needs them exact).
 */
export type ExportRow = {
  id: string
  source_id: string
  source_vhost: string
  source_queue: string
  status: string
  status_reason: string | null
  status_changed_at: string | null
  status_changed_by: string | null
  seen_count: number
  fingerprint: string
  body_size: number
  body_encoding: string
  /** Binary bodies as bytes (any body, on a page read with FALLBACK_COLUMNS)… */
  body: Buffer | null
  /** …text and JSON bodies as text, decoded by the database: they are valid UTF-8 by construction (classifyBody). */
  body_text: string | null
  /** The jsonb/json columns as stored text: parsed only where needed, and passed through unchanged when nothing is redacted. */
  properties_json: string
  headers_json: string
  delivery_exchange: string
  delivery_routing_key: string
  redelivered: boolean
  death_reason: string | null
  attempts: number | null
  origin_exchange: string | null
  origin_routing_keys: string[] | null
  origin_queue: string | null
  first_death_at: string | null
  last_death_at: string | null
  failed_at: string
  error_type: string | null
  error_message: string | null
  error_stack: string | null
  failure_kind: string
  service: string | null
  service_version: string | null
  framework: string
  entity_key: string | null
  group_id: string
  group_title: string
  flags: string[]
  lineage_origin_id: string | null
  lineage_replay_id: string | null
  replay_count: number
  held_from: string | null
  ingested_at: string
}

const TIMESTAMPS = ['status_changed_at', 'first_death_at', 'last_death_at', 'failed_at', 'ingested_at'] as const

/**
 * Timestamps leave the database as plain UTC text ("2026-12-01 07:56:59.33793", its own output format) and become
 * ISO 8601 here: to_char costs the database twice as much as the rest of a page, and node-pg's Date parsing drops
 * the microseconds a keyset cursor needs.
 */
const utcText = (column: (typeof TIMESTAMPS)[number]) => `(${column === 'status_changed_at' ? 'st' : 'd'}.${column} AT TIME ZONE 'UTC')::text AS ${column}`
const toIso = (text: string | null) => (text === null ? null : `${text.replace(' ', 'T')}Z`)

const COMMON_COLUMNS = `d.id::text, d.source_id::text, s.vhost AS source_vhost, s.queue AS source_queue, ${STATUS_SQL} AS status, st.status_reason,
  st.status_changed_by, d.seen_count, encode(d.fingerprint, 'hex') AS fingerprint, d.body_size, d.body_encoding,
  d.properties::text AS properties_json, d.headers::text AS headers_json, d.delivery_exchange,
  d.delivery_routing_key, d.redelivered, d.death_reason, d.attempts, d.origin_exchange, d.origin_routing_keys, d.origin_queue,
  d.error_type, d.error_message, d.error_stack, d.failure_kind, d.service, d.service_version, d.framework, d.entity_key,
  d.group_id::text, g.title AS group_title, d.flags, d.lineage_origin_id, d.lineage_replay_id, d.replay_count, d.held_from,
  ${TIMESTAMPS.map(utcText).join(', ')}`

/** Text bodies as text (half the work of bytea's hex for both sides); binary bodies as bytes. */
export const EXPORT_COLUMNS = `${COMMON_COLUMNS}, CASE WHEN d.body_encoding = 'binary' THEN d.body END AS body,
  CASE WHEN d.body_encoding <> 'binary' THEN convert_from(d.body, 'UTF8') END AS body_text`
/** For a page whose text body turns out not to be valid UTF-8 (written by something other than the drainer). */
export const FALLBACK_COLUMNS = `${COMMON_COLUMNS}, d.body, NULL::text AS body_text`

export const EXPORT_JOINS = `JOIN sources s ON s.id = d.source_id JOIN error_groups g ON g.id = d.group_id`

/** A prepared statement per distinct page boundary query: an export runs the same one a thousand times. */
const statementName = (text: string) => `lazarus_export_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`

/** Rows as the database sent them (`$COLUMNS` in `text` stands for the export's columns), timestamps made ISO 8601. */
export async function queryExportRows({ sql, text, params }: { sql: Sql; text: string; params: unknown[] }): Promise<ExportRow[]> {
  const run = (columns: string) => {
    const statement = text.replace('$COLUMNS', () => columns)
    return sql.query<ExportRow>(statement, params)
  }
  let rows: ExportRow[]
  try {
    rows = (await run(EXPORT_COLUMNS)).rows
  } catch (error) {
    const code = (error as { code?: string }).code
    if (!code || !NOT_UTF8.has(code)) throw error
    rows = (await run(FALLBACK_COLUMNS)).rows
  }
  for (const row of rows) for (const column of TIMESTAMPS) row[column] = toIso(row[column])!
  return rows
}

/** invalid_byte_sequence / untranslatable_character: a stored body that is not the UTF-8 its encoding claims. */
const NOT_UTF8 = new Set(['22021', '22P05'])

/** The x-death value of a (parsed) stored header table: the same value the x_death column holds, read once. */
export function storedXDeath(headers: unknown): TypedValue | null {
  if (headers === null || typeof headers !== 'object' || !Object.hasOwn(headers, 'x-death')) return null
  return (headers as TypedTable)['x-death'] ?? null
}

/** The body as stored, whichever way it was read. */
export const storedBody = (row: ExportRow): Buffer => row.body ?? Buffer.from(row.body_text ?? '', 'utf8')

/**
 * A row's body after redaction: its bytes, its UTF-8 text view (null for binary bodies), whether anything changed,
 * and why the whole body was masked (a content encoding that did not decode, or a gzip bomb), if it was.
 */
export function redactedBody(row: ExportRow, redactor: Redactor): { bytes: Buffer; text: string | null; redacted: boolean; masked: string | null } {
  // Compressed or base64 bodies hide their content from every rule: they are decoded, redacted and encoded again.
  if (redactor.active && row.properties_json.includes('"contentEncoding"')) {
    const contentEncoding = (JSON.parse(row.properties_json) as { contentEncoding?: unknown }).contentEncoding
    const decoded = redactor.encodedBody(storedBody(row), contentEncoding)
    if (decoded) return decoded
  }
  if (row.body_text !== null) {
    const text = redactor.bodyText(row.body_text, row.body_encoding)
    return { bytes: Buffer.from(text, 'utf8'), text, redacted: text !== row.body_text, masked: null }
  }
  const stored = storedBody(row)
  const { bytes, text } = redactor.bodyWithText(stored, row.body_encoding)
  return { bytes, text, redacted: bytes !== stored, masked: null }
}

export type ReadPagesOptions = {
  /** Rows per query. */
  pageRows?: number
  /** Body bytes per query: a page ends early (after at least one row) once its bodies add up to this. */
  pageBytes?: number
} & SourceScope

const DEFAULT_PAGE_ROWS = 500
const DEFAULT_PAGE_BYTES = 4 * 1024 * 1024

/**
 * Every row of the selection, newest failure first, a page at a time along the keyset (failed_at, id): each query
 * is a short index range however deep the export is, and memory holds one page (two while the next is prefetched)
 * bounded in rows and in body bytes, so a million rows or a few 16 MiB bodies stream alike.
 *
 * A page is two statements. The first walks the next `pageRows` keys with their body sizes only (no row is
 * detoasted) and returns the last key that fits the byte budget; the second reads the rows up to that key, a plain
 * index range the database streams out as fast as COPY. Cutting the page in the same statement that reads the rows
 * made the database copy every wide row through a window and a sort, at half the speed.
 */
export async function* readExportPages(sql: Sql, selection: Selection, options: ReadPagesOptions = {}): AsyncGenerator<ExportRow[]> {
  const pageRows = options.pageRows ?? DEFAULT_PAGE_ROWS
  const pageBytes = options.pageBytes ?? DEFAULT_PAGE_BYTES
  const filter = selectionFilter(selection)
  const fetchPage = async (after: ExportRow | null): Promise<ExportRow[]> => {
    const params: unknown[] = []
    // A text search walks along the pages rather than through the index (TextSearch in selection-sql.ts).
    const { where, searchJoin: join } = selectionSql({ selection, params, sourceIds: options.sourceIds, textSearch: 'per-row' })
    const order = listOrderSql(filter)
    const keyset = after ? ` AND ${afterCursorSql(filter, { failedAt: after.failed_at, id: after.id }, params)}` : ''
    const n = params.length
    const boundaryText = `SELECT failed_at, id, position::int AS rows FROM (
         SELECT d.id::text, (d.failed_at AT TIME ZONE 'UTC')::text AS failed_at, row_number() OVER w AS position,
           sum(d.body_size::bigint) OVER w - d.body_size AS before_bytes
         FROM ${MESSAGES_FROM} ${join}
         WHERE ${where}${keyset}
         WINDOW w AS (ORDER BY ${order} ROWS UNBOUNDED PRECEDING)
         ORDER BY ${order} LIMIT $${n + 1}
       ) page WHERE before_bytes < $${n + 2} ORDER BY position DESC LIMIT 1`
    const { rows: [last] } = await sql.query<{ failed_at: string; id: string; rows: number }>(boundaryText, [...params, pageRows, pageBytes], {
      name: statementName(boundaryText),
    })
    if (!last) return []
    const upTo = keysetSql(filter, '>=', { failedAt: toIso(last.failed_at)!, id: last.id }, params)
    params.push(last.rows)
    // Planned for its own bounds and the page's exact row count, every time (not prepared): a generic plan cannot see
    // that a page is a few hundred rows, and planned a parallel hash join and sort that started two worker processes
    // per page and cost PostgreSQL four times as much per row (docs/performance.md#export). Rows stored inside the range
    // since the boundary was read are cut by the LIMIT, and the next page starts after the last row returned.
    return queryExportRows({
      sql,
      text: `SELECT $COLUMNS FROM ${MESSAGES_FROM} ${EXPORT_JOINS} ${join} WHERE ${where}${keyset} AND ${upTo} ORDER BY ${order} LIMIT $${params.length}`,
      params,
    })
  }
  let next = fetchPage(null)
  for (;;) {
    const page = await next
    if (page.length === 0) return
    // Prefetch while the caller serialises this page: the database and the event loop work at the same time.
    next = fetchPage(page[page.length - 1])
    // Its failure is thrown by the await above on the next turn; this only keeps a prefetch nobody awaits (the
    // consumer stopped) from being an unhandled rejection.
    next.catch(() => {})
    yield page
  }
}
