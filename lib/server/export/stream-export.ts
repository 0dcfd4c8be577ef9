import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { bindToRequest, currentRequestId } from '@/lib/server/platform/request-context'
import { logger } from '@/lib/server/platform/log'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { ExportFormat, ExportQuery } from '@/lib/shared/schemas/export'
import type { Selection } from '@/lib/shared/schemas/selection'
import { filtersMaskedText, matchesRedacted, needsRedaction, type RedactedView } from '@/lib/server/messages/redacted-search'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { ErrorBody } from '@/lib/server/platform/http/handle-route'
import { csvHeader, toCsvLine } from './csv'
import { readExportPages, type ExportRow, type ReadPagesOptions } from './export-rows'
import { toJsonLine } from './jsonl'
import { buildGroupTicket, buildSelectionTicket } from './ticket'

export type ExportFile = {
  body: ReadableStream<Uint8Array>
  contentType: string
  filename: string
}

const log = logger('export')

const CONTENT_TYPES: Record<ExportFormat, string> = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
  md: 'text/markdown; charset=utf-8',
}

/** The selection an export query spells: `ids=…`, or the message-list filters (`group=ID` exports a group). */
export function selectionOf(query: ExportQuery): Selection {
  const { format: _format, ids, ...filter } = query
  return ids ? { ids } : { filter }
}

/** The group id when the selection is exactly one whole group (`group=ID` and no other filter). */
function wholeGroup(selection: Selection): string | null {
  if ('groupId' in selection) return selection.groupId
  if (!('filter' in selection) || !selection.filter.group) return null
  return Object.values(selection.filter).filter((v) => v !== undefined).length === 1 ? selection.filter.group : null
}

/** lazarus-group-12-20261201T073925Z.csv */
function filenameOf(selection: Selection, format: ExportFormat, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  const group = wholeGroup(selection)
  return `lazarus-${group ? `group-${group}` : 'messages'}-${stamp}.${format}`
}

type Serialiser = { head: string; line: (row: ExportRow, redactor: Redactor) => string }

const SERIALISERS: Record<'jsonl' | 'csv', Serialiser> = {
  jsonl: { head: '', line: (row, redactor) => `${toJsonLine(row, redactor)}\n` },
  csv: { head: csvHeader(), line: toCsvLine },
}

/**
 * The rows of a selection as a byte stream, a database page per chunk. Pull-based: the next page is read only when
 * the consumer (the HTTP response, hence the client's download) has taken the previous one, so a slow client slows
 * the export instead of filling memory.
 *
 * The first page is read before the stream is returned, so whatever makes the query fail (the database, input no
 * schema caught) fails the request with an error response instead of a 200 cut short. A later page that fails ends
 * the download so no client takes it for complete: JSON Lines gets a last line `{"error": {…}}`, and then the stream
 * errors, which makes the HTTP layer drop the connection rather than end the body (curl, fetch and browsers report a
 * failed transfer). CSV has no place for such a line and is only aborted.
 */
export async function streamRows(
  selection: Selection,
  format: 'jsonl' | 'csv',
  redactor: Redactor,
  options: ReadPagesOptions & { db: Db; view?: RedactedView },
): Promise<ReadableStream<Uint8Array>> {
  const serialiser = SERIALISERS[format]
  const keep = redactedFilter(selection, options.view)
  const pages = readExportPages(options.db.sql, selection, options)
  let first: IteratorResult<ExportRow[]> | null = await pages.next()
  let failure: unknown = null
  let rows = 0
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (serialiser.head) controller.enqueue(Buffer.from(serialiser.head, 'utf8'))
      },
      // Called by the HTTP layer after the route returned: still the request's, for its log lines.
      pull: bindToRequest(async (controller: ReadableStreamDefaultController<Uint8Array>) => {
        // The error line has been taken by the consumer: now abort.
        if (failure !== null) return controller.error(failure)
        try {
          const next = first ?? (await pages.next())
          first = null
          if (next.done) {
            controller.close()
            return
          }
          const page = keep ? next.value.filter(keep) : next.value
          // Redacting and serialising a page is CPU work on the one event loop every request shares: done in slices with a
          // turn of the loop between them, so other users' requests are answered in between (npm run bench:isolation).
          for (let at = 0; at < page.length; at += SLICE_ROWS) {
            if (at > 0) await new Promise((resolve) => setImmediate(resolve))
            for (const chunk of encodeLines(page.slice(at, at + SLICE_ROWS), (row) => serialiser.line(row, redactor))) controller.enqueue(chunk)
          }
          rows += page.length
        } catch (error) {
          log.error('export failed mid-stream', { format, rows, error: (error as Error).message })
          if (format !== 'jsonl') return controller.error(error)
          failure = error
          const requestId = currentRequestId()
          const line: ErrorBody = { error: { code: 'internal', message: `The export failed after ${rows} rows; this file is incomplete`, ...(requestId ? { details: { requestId } } : {}) } }
          controller.enqueue(Buffer.from(`${JSON.stringify(line)}\n`, 'utf8'))
        }
      }),
      async cancel() {
        await pages.return(undefined)
      },
    },
    { highWaterMark: 1 },
  )
}

/**
 * For a caller who sees some sources redacted: a text filter (`q`, `entity`) must match a row's redacted text, not
 * only what the database found in the stored one (redacted-search.ts), or the export would be the oracle the list is not.
 */
function redactedFilter(selection: Selection, view: RedactedView | undefined): ((row: ExportRow) => boolean) | null {
  if (!view || view.rawSourceIds === null || !('filter' in selection)) return null
  const { q, entity, match, traceId } = selection.filter
  if (!filtersMaskedText({ q, entity, match, traceId })) return null
  return (row) =>
    !needsRedaction(view, row.source_id) ||
    matchesRedacted(
      {
        errorType: row.error_type, errorMessage: row.error_message, entityKey: row.entity_key, bodyText: row.body_text, bodyEncoding: row.body_encoding,
        headersJson: row.headers_json, propertiesJson: row.properties_json, bodyJson: row.body_encoding === 'json' ? row.body_text : null,
      },
      { q, entity, match, traceId },
      view.redactor,
    )
}

/** Rows serialised between two turns of the event loop (a few milliseconds of work). */
const SLICE_ROWS = 50

const BLOCK_BYTES = 1024 * 1024

/**
 * UTF-8 bytes of the rows' lines, written line by line into 1 MiB blocks (off the JavaScript heap) rather than joined
 * into one page-sized string first: no multi-megabyte string to build, flatten and collect per page.
 */
function* encodeLines(rows: ExportRow[], line: (row: ExportRow) => string): Generator<Uint8Array> {
  let block = Buffer.allocUnsafe(BLOCK_BYTES)
  let used = 0
  for (const row of rows) {
    const text = line(row)
    // UTF-8 needs at most 3 bytes per UTF-16 code unit.
    if (used + text.length * 3 > block.length) {
      if (used > 0) yield block.subarray(0, used)
      block = Buffer.allocUnsafe(Math.max(BLOCK_BYTES, text.length * 3))
      used = 0
    }
    used += block.write(text, used, 'utf8')
  }
  if (used > 0) yield block.subarray(0, used)
}

/**
 * GET /api/export: checks the request (a named group must exist), then streams the file. With `sourceIds`, only
 * those sources' messages are exported, and a named group none of them holds a message of is not found.
 */
export async function exportMessages(query: ExportQuery, options: { db: Db; baseUrl: string; now?: Date; view?: RedactedView } & SourceScope): Promise<ExportFile> {
  const selection = selectionOf(query)
  const now = options.now ?? new Date()
  const sourceIds = allowedSourceIds(options)
  if ('filter' in selection && selection.filter.group) {
    const { sql } = options.db
    const groupId = parseId(selection.filter.group, 'group').toString()
    const { rows } = sourceIds
      ? await sql.query('SELECT 1 FROM group_source_stats WHERE group_id = $1::bigint AND source_id = ANY($2::bigint[]) AND count > 0 LIMIT 1', [groupId, sourceIds])
      : await sql.query('SELECT 1 FROM error_groups WHERE id = $1::bigint', [groupId])
    if (rows.length === 0) throw notFound(`group ${selection.filter.group}`)
  }
  const redactor = await loadRedactor({ sql: options.db.sql })
  const filename = filenameOf(selection, query.format, now)
  if (query.format === 'md') {
    // A ticket's counts and samples come from the database's match: with a text filter they could tell a viewer what a
    // masked value holds. CSV and JSON Lines check each row's redacted text instead.
    if (options.view?.rawSourceIds && 'filter' in selection && filtersMaskedText(selection.filter)) {
      throw new AppError('forbidden', 'A Markdown ticket of a text search or a header value filter needs raw access to these messages (operator); export CSV or JSON Lines instead')
    }
    const group = wholeGroup(selection)
    const markdown = group
      ? await buildGroupTicket(group, { db: options.db, redactor, baseUrl: options.baseUrl, now, sourceIds })
      : await buildSelectionTicket(selection, { db: options.db, redactor, baseUrl: options.baseUrl, now, sourceIds })
    return { body: new Blob([markdown]).stream(), contentType: CONTENT_TYPES.md, filename }
  }
  const body = await streamRows(selection, query.format, redactor, { db: options.db, ...(sourceIds ? { sourceIds } : {}), view: options.view })
  return { body, contentType: CONTENT_TYPES[query.format], filename }
}
