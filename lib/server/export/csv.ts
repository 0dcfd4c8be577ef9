import 'server-only'
import { typedTableToApiJson, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { redactedBody, type ExportRow } from './export-rows'

/** Excel reads a CSV as UTF-8 only when it starts with a byte order mark; without it accents and emoji turn to mojibake. */
export const CSV_BOM = '\uFEFF'

/** Excel's limit per cell is 32,767 characters; longer text is cut (the JSON Lines export has it whole). */
export const MAX_CELL_CHARS = 32_000
const TRUNCATED = '… [truncated]'

/** Semicolons too: a spreadsheet in a locale whose list separator is `;` splits an unquoted cell there. */
const NEEDS_QUOTES = /[",;\r\n]|^\s|\s$/
/**
 * Spreadsheets run a cell starting with one of these as a formula (OWASP "CSV injection"); a leading ' makes it text.
 * They skip leading white space (no-break and zero-width spaces, tabs, line breaks) before deciding, and take the
 * full-width and small forms (＝ ＋ － ＠, ﹦ ﹢ ﹣ ﹫) for the ASCII ones, so those count as formula starts too.
 */
const FORMULA_START = /^[\t\r]|^[\s\u200B-\u200D\u2060]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE66\uFE62\uFE63\uFE6B]/

type Cell = string | number | boolean | null

/** One RFC 4180 field: quoted when it holds a comma, semicolon, quote or line break (or edge spaces), quotes doubled. */
export function csvCell(value: Cell): string {
  if (value === null) return ''
  let text = typeof value === 'string' ? value : String(value)
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const csvLine = (cells: readonly Cell[]) => `${cells.map(csvCell).join(',')}\r\n`

const cut = (text: string | null) => (text !== null && text.length > MAX_CELL_CHARS ? text.slice(0, MAX_CELL_CHARS) + TRUNCATED : text)

/** The plain header view; a stored table of unexpected shape is shown as it is stored. */
export function apiHeaders(table: TypedTable): unknown {
  try {
    return typedTableToApiJson(table)
  } catch {
    return table
  }
}

const str = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null)

const MAX_BINARY_BYTES = Math.floor((MAX_CELL_CHARS - 7) / 4) * 3

const binaryCell = (body: Buffer) =>
  body.length > MAX_BINARY_BYTES ? `base64:${body.subarray(0, MAX_BINARY_BYTES).toString('base64')}${TRUNCATED}` : `base64:${body.toString('base64')}`

/** Columns: what a spreadsheet of failures needs, one row per message, in this order. */
export const CSV_COLUMNS = [
  'id', 'failed_at', 'status', 'source_queue', 'group_id', 'group_title', 'error_type', 'error_message', 'failure_kind',
  'service', 'service_version', 'framework', 'entity_key', 'death_reason', 'attempts', 'origin_exchange',
  'origin_routing_keys', 'origin_queue', 'first_death_at', 'last_death_at', 'ingested_at', 'seen_count', 'replay_count',
  'status_reason', 'content_type', 'message_id', 'correlation_id', 'body_encoding', 'body_size', 'body', 'error_stack', 'headers',
] as const

export const csvHeader = () => CSV_BOM + csvLine(CSV_COLUMNS)

/** A message as one CSV record (CRLF-terminated). Binary bodies appear as "base64:…". */
export function toCsvLine(row: ExportRow, redactor: Redactor): string {
  const body = redactedBody(row, redactor)
  const properties = redactor.json(JSON.parse(row.properties_json) as Record<string, unknown>)
  const bodyText = body.text === null ? binaryCell(body.bytes) : cut(body.text)
  const headers = redactor.typedTable(JSON.parse(row.headers_json) as TypedTable)
  const text = (value: string | null) => (value === null ? null : redactor.text(value))
  return csvLine([
    row.id,
    row.failed_at,
    row.status,
    row.source_queue,
    row.group_id,
    text(row.group_title),
    text(row.error_type),
    cut(text(row.error_message)),
    row.failure_kind,
    row.service,
    row.service_version,
    row.framework,
    text(row.entity_key),
    row.death_reason,
    row.attempts,
    row.origin_exchange,
    (row.origin_routing_keys ?? []).map((k) => redactor.text(k)).join(' '),
    row.origin_queue,
    row.first_death_at,
    row.last_death_at,
    row.ingested_at,
    row.seen_count,
    row.replay_count,
    text(row.status_reason),
    str(properties.contentType),
    str(properties.messageId),
    str(properties.correlationId),
    row.body_encoding,
    row.body_size,
    bodyText,
    cut(text(row.error_stack)),
    cut(Object.keys(headers).length ? JSON.stringify(apiHeaders(headers)) : null),
  ])
}
