import 'server-only'
import type { ApiJsonValue, TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { getGroup } from '@/lib/server/groups/get-group'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { listOrderSql, MESSAGES_FROM, STATUS_SQL } from '@/lib/server/selection/message-filter-sql'
import { xDeathDto } from '@/lib/server/messages/to-message-dto'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { selectionFilter, selectionSql } from '@/lib/server/selection/selection-sql'
import { filterParams, type MessageFilter } from '@/lib/shared/schemas/message-filter'
import type { Selection } from '@/lib/shared/schemas/selection'
import { EXPORT_JOINS, queryExportRows, redactedBody, storedXDeath, type ExportRow } from './export-rows'
import { apiHeaders } from './csv'
import { autolink, codeBlock, escapeInline, firstLines, formatCount, inlineCode, link, truncate } from './markdown'

/** Markdown bug tickets: a group, one message, or any export selection, redacted, with links back to Lazarus. */

/** `sourceIds`: a caller restricted to those sources gets a ticket of their messages only (see SourceScope). */
export type TicketOptions = { db: Db; redactor: Redactor; baseUrl: string; now?: Date } & SourceScope

const SAMPLES = 3
const BODY_CHARS = 4_000
const STACK_LINES = 40
const HEADER_VALUE_CHARS = 300
const HEADERS_CHARS = 4_000
const TOP = 10

const lines = (...parts: (string | null | false | undefined)[]) => parts.filter((p): p is string => typeof p === 'string').join('\n')
const bullet = (label: string, value: string | null) => (value === null || value === '' ? null : `- **${label}:** ${value}`)
const code = (value: string | null) => (value === null || value === '' ? null : inlineCode(value))
const codes = (values: readonly string[]) => (values.length ? values.map(inlineCode).join(', ') : null)

async function rowsById({ sql, ids, sourceIds = null }: { sql: Sql; ids: string[]; sourceIds?: string[] | null }): Promise<ExportRow[]> {
  if (ids.length === 0) return []
  const params: unknown[] = []
  const { where } = selectionSql({ selection: { ids }, params, sourceIds })
  return queryExportRows({ sql, text: `SELECT $COLUMNS FROM ${MESSAGES_FROM} ${EXPORT_JOINS} WHERE ${where} ORDER BY d.failed_at DESC, d.id DESC`, params })
}

/** Long header strings (stack traces) are cut: the ticket shows the stack on its own. */
function shortened(value: ApiJsonValue): ApiJsonValue {
  if (typeof value === 'string') return value.length > HEADER_VALUE_CHARS ? `${value.slice(0, HEADER_VALUE_CHARS)}… [${formatCount(value.length)} chars]` : value
  if (Array.isArray(value)) return value.map(shortened)
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shortened(v)]))
  return value
}

/** One message: facts, error, stack, x-death, headers and body, every piece of content redacted and escaped. */
function messageSection(row: ExportRow, { redactor, baseUrl }: TicketOptions, heading: string): string {
  const text = (value: string | null) => (value === null ? null : redactor.text(value))
  const headers = redactor.typedTable(JSON.parse(row.headers_json) as TypedTable)
  let xDeath: ReturnType<typeof xDeathDto>
  try {
    xDeath = xDeathDto(storedXDeath(headers))
  } catch {
    xDeath = []
  }
  const body = redactedBody(row, redactor)
  const stack = text(row.error_stack)
  const errorType = text(row.error_type)
  const errorMessage = text(row.error_message)

  const death = [row.death_reason, row.attempts !== null ? `after ${formatCount(row.attempts)} attempt${row.attempts === 1 ? '' : 's'}` : null].filter(Boolean).join(' ')
  const origin = [
    row.origin_exchange !== null ? `exchange ${inlineCode(row.origin_exchange || '(default)')}` : null,
    row.origin_routing_keys?.length ? `routing key${row.origin_routing_keys.length > 1 ? 's' : ''} ${row.origin_routing_keys.map((k) => inlineCode(redactor.text(k))).join(', ')}` : null,
    row.origin_queue !== null ? `queue ${inlineCode(row.origin_queue)}` : null,
  ].filter(Boolean)

  let bodyBlock: string
  if (body.bytes.length === 0) bodyBlock = '_(empty body)_'
  else if (body.text === null) {
    const shown = truncate(body.bytes.toString('base64'), BODY_CHARS)
    bodyBlock = lines(`**Body** (binary, ${formatCount(row.body_size)} bytes, base64${shown.truncated ? ', truncated' : ''}):`, '', codeBlock(shown.text))
  } else {
    const shown = truncate(body.text, BODY_CHARS)
    bodyBlock = lines(
      `**Body** (${row.body_encoding}, ${formatCount(row.body_size)} bytes${shown.truncated ? `, first ${formatCount(BODY_CHARS)} characters` : ''}):`,
      '',
      codeBlock(shown.text, row.body_encoding === 'json' ? 'json' : 'text'),
    )
  }

  const headerJson = truncate(JSON.stringify(shortened(apiHeaders(headers) as ApiJsonValue), null, 2), HEADERS_CHARS)
  const stackShown = stack ? firstLines(stack, STACK_LINES) : null

  return lines(
    `${heading} Message #${row.id} · ${row.failed_at} · ${link('open in Lazarus', `${baseUrl}/messages/${row.id}`)}`,
    '',
    bullet('Source', inlineCode(row.source_queue)),
    bullet('Status', escapeInline(row.status)),
    bullet('Service', [row.service && inlineCode(row.service), row.service_version && inlineCode(row.service_version), `(${escapeInline(row.framework)})`].filter(Boolean).join(' ')),
    bullet('Failure kind', escapeInline(row.failure_kind)),
    bullet('Death', death ? escapeInline(death) : null),
    bullet('Origin', origin.length ? origin.join(', ') : null),
    bullet('Entity', code(text(row.entity_key))),
    bullet('First death', row.first_death_at && escapeInline(row.first_death_at)),
    bullet('Seen', row.seen_count > 1 ? `${formatCount(row.seen_count)} times` : null),
    '',
    errorType || errorMessage ? `**Error:** ${[errorType && inlineCode(errorType), errorMessage && escapeInline(truncate(errorMessage, 1_000).text)].filter(Boolean).join(': ')}` : '**Error:** _(none recorded)_',
    stackShown && '',
    stackShown && `**Stack trace**${stackShown.truncated ? ` (first ${STACK_LINES} lines)` : ''}:`,
    stackShown && '',
    stackShown && codeBlock(stackShown.text),
    xDeath.length > 0 && '',
    xDeath.length > 0 && '**x-death:**',
    xDeath.length > 0 && '',
    xDeath.length > 0 && '| queue | reason | count | exchange | routing keys | time |\n|---|---|---:|---|---|---|',
    ...xDeath.map(
      (d) =>
        `| ${[d.queue, d.reason].map((v) => (v ? escapeInline(v) : '')).join(' | ')} | ${d.count ?? ''} | ${d.exchange !== null ? escapeInline(d.exchange || '(default)') : ''} | ${d.routingKeys.map((k) => escapeInline(redactor.text(k))).join(', ')} | ${d.time ? escapeInline(d.time) : ''} |`,
    ),
    '',
    `**Headers**${headerJson.truncated ? ' (truncated)' : ''}:`,
    '',
    codeBlock(headerJson.text, 'json'),
    '',
    bodyBlock,
  )
}

function footer(options: TicketOptions): string {
  return `_Exported from Lazarus at ${escapeInline((options.now ?? new Date()).toISOString())}. Redaction rules were applied: secrets show as \\[REDACTED\\]._`
}

/** GET /api/groups/{id}/ticket */
export async function buildGroupTicket(id: string, options: TicketOptions): Promise<string> {
  const { sql } = options.db
  const groupId = parseId(id, 'group').toString()
  const sourceIds = allowedSourceIds(options)
  const { group, breakdown, breakdownSampled } = await getGroup({ db: options.db, id: groupId, range: '24h', now: options.now, sourceIds })
  const { redactor, baseUrl } = options
  // Restricted: the group as the allowed sources show it already carries their counters.
  const { rows: counters } = sourceIds
    ? { rows: [{ replayed: group.replayedCount, resolved: group.resolvedCount }] }
    : await sql.query<{ replayed: number; resolved: number }>(
      'SELECT replayed_count::float8 AS replayed, resolved_count::float8 AS resolved FROM error_groups WHERE id = $1::bigint',
      [groupId],
    )
  const { replayed = 0, resolved = 0 } = counters[0] ?? {}
  // Samples come from the allowed sources only; the appended parameter is numbered after each query's own.
  const inSources = (n: number) => (sourceIds ? ` AND source_id = ANY($${n}::bigint[])` : '')
  const withSources = (params: unknown[]) => (sourceIds ? [...params, sourceIds] : params)

  const facet = (entries: { value: string | null; count: number }[], fallback: string[]) =>
    entries.length
      ? entries.slice(0, TOP).map((e) => `${e.value === null ? '_(none)_' : inlineCode(e.value)} (${formatCount(e.count)})`).join(', ') + (entries.length > TOP ? ', …' : '')
      : codes(fallback)

  const sampleIds: string[] = []
  const newest = await sql.query<{ id: string }>(
    `SELECT id::text FROM dead_letters WHERE group_id = $1::bigint${inSources(2)} ORDER BY failed_at DESC, id DESC LIMIT 1`,
    withSources([groupId]),
  )
  if (newest.rows[0]) sampleIds.push(newest.rows[0].id)
  // Then the newest failure of each other version, most frequent first: the ticket shows how the failure varies.
  const versions = breakdown.serviceVersions.length ? breakdown.serviceVersions.map((v) => v.value) : group.serviceVersions
  for (const version of versions) {
    if (sampleIds.length >= SAMPLES) break
    const { rows } = await sql.query<{ id: string }>(
      `SELECT id::text FROM dead_letters WHERE group_id = $1::bigint AND service_version IS NOT DISTINCT FROM $2 AND id <> ALL($3::bigint[])${inSources(4)}
       ORDER BY failed_at DESC, id DESC LIMIT 1`,
      withSources([groupId, version, sampleIds]),
    )
    if (rows[0]) sampleIds.push(rows[0].id)
  }
  if (sampleIds.length < SAMPLES) {
    const { rows } = await sql.query<{ id: string }>(
      `SELECT id::text FROM dead_letters WHERE group_id = $1::bigint AND id <> ALL($2::bigint[])${inSources(4)} ORDER BY failed_at DESC, id DESC LIMIT $3`,
      withSources([groupId, sampleIds, SAMPLES - sampleIds.length]),
    )
    sampleIds.push(...rows.map((r) => r.id))
  }
  const samples = await rowsById({ sql, ids: sampleIds, sourceIds })
  const title = redactor.text(group.title)
  const other = group.count - replayed - resolved

  return lines(
    `## ${escapeInline(title)}`,
    '',
    `Error group #${group.id} in Lazarus: ${autolink(`${baseUrl}/groups/${group.id}`)}`,
    '',
    bullet('Status', escapeInline(group.status)),
    bullet('Error type', code(group.errorType && redactor.text(group.errorType))),
    bullet(
      'Messages',
      `${formatCount(group.count)} (${[`${formatCount(Math.max(0, other))} dead or held`, replayed ? `${formatCount(replayed)} replayed` : null, resolved ? `${formatCount(resolved)} resolved` : null].filter(Boolean).join(' · ')})`,
    ),
    bullet('Time range', `${escapeInline(group.firstSeen)} → ${escapeInline(group.lastSeen)}`),
    bullet('Inflow', `${group.ratePerMinute.last5}/min over the last 5 min · ${group.ratePerMinute.last60}/min over the last hour`),
    bullet('Sources', facet(breakdown.sources, group.sources)),
    bullet('Services', facet(breakdown.services, group.services)),
    bullet('Versions', facet(breakdown.serviceVersions, group.serviceVersions)),
    bullet('Failure kinds', facet(breakdown.failureKinds, group.failureKinds)),
    bullet('Signature', code(redactor.text(group.signature))),
    bullet('Ticket', group.ticketUrl ? inlineCode(redactor.text(group.ticketUrl)) : null),
    bullet('Note', group.note ? escapeInline(redactor.text(group.note)) : null),
    breakdownSampled ? '\n_Breakdowns count the most recent messages of the group._' : null,
    '',
    `### Sample messages (${samples.length} of ${formatCount(group.count)})`,
    ...samples.flatMap((row) => ['', messageSection(row, options, '####')]),
    '',
    '---',
    footer(options),
    '',
  )
}

/** GET /api/messages/{id}/ticket */
export async function buildMessageTicket(id: string, options: TicketOptions): Promise<string> {
  const { sql } = options.db
  const messageId = parseId(id, 'message').toString()
  const [row] = await rowsById({ sql, ids: [messageId], sourceIds: allowedSourceIds(options) })
  if (!row) throw notFound(`message ${id}`)
  const title = options.redactor.text(row.group_title)
  return lines(
    `## ${escapeInline(title)}`,
    '',
    `One failed message of error group #${row.group_id}: ${autolink(`${options.baseUrl}/groups/${row.group_id}`)}`,
    '',
    messageSection(row, options, '###'),
    '',
    '---',
    footer(options),
    '',
  )
}

type FacetRow = { facet: string; group_id: string | null; title: string | null; queue: string | null; service: string | null; service_version: string | null; failure_kind: string | null; status: string | null; n: number; first_at: string | null; last_at: string | null }

const FILTER_LABELS: Partial<Record<keyof MessageFilter, string>> = {
  group: 'group', source: 'source', status: 'status', failureKind: 'failure kind', service: 'service', serviceVersion: 'version',
  entity: 'entity', q: 'text', traceId: 'trace', from: 'from', to: 'to',
}

/**
 * Query string of the messages page for a filter: the link back for a filtered export. A value the rules would
 * redact (an e-mail address as the entity, a secret in `q`) is left out rather than pasted into a ticket.
 */
export function filterQuery(filter: MessageFilter, redactor: Redactor): { query: string; omitted: boolean } {
  const params = new URLSearchParams()
  let omitted = false
  for (const [key, text] of filterParams(filter)) {
    if (redactor.text(text) !== text) omitted = true
    else params.set(key, text)
  }
  const query = params.toString()
  return { query: query ? `?${query}` : '', omitted }
}

/** GET /api/export?format=md: a ticket for a selection, with counts from one pass over it and the first messages as samples. */
export async function buildSelectionTicket(selection: Selection, options: TicketOptions): Promise<string> {
  const { sql } = options.db
  const { redactor, baseUrl } = options
  // Counts and samples walk the selection like the export does (TextSearch in selection-sql.ts).
  const selectionWhere = (params: unknown[]) => selectionSql({ selection, params, sourceIds: options.sourceIds, textSearch: 'per-row' })
  const params: unknown[] = []
  const { where, searchJoin } = selectionWhere(params)
  const { rows } = await sql.query<FacetRow>(
    `SELECT f.facet, f.group_id::text, g.title, s.queue, f.service, f.service_version, f.failure_kind, f.status, f.n::float8 AS n,
       to_char(f.first_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS first_at, to_char(f.last_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_at
     FROM (
       SELECT CASE WHEN GROUPING(d.group_id) = 0 THEN 'group' WHEN GROUPING(d.source_id) = 0 THEN 'source'
                   WHEN GROUPING(d.service, d.service_version) = 0 THEN 'version' WHEN GROUPING(d.failure_kind) = 0 THEN 'kind'
                   WHEN GROUPING(${STATUS_SQL}) = 0 THEN 'status' ELSE 'total' END AS facet,
         d.group_id, d.source_id, d.service, d.service_version, d.failure_kind, ${STATUS_SQL} AS status, count(*) AS n, min(d.failed_at) AS first_at, max(d.failed_at) AS last_at
       FROM ${MESSAGES_FROM} ${searchJoin}
       WHERE ${where}
       GROUP BY GROUPING SETS ((d.group_id), (d.source_id), (d.service, d.service_version), (d.failure_kind), (${STATUS_SQL}), ())
     ) f
     LEFT JOIN error_groups g ON g.id = f.group_id
     LEFT JOIN sources s ON s.id = f.source_id
     ORDER BY f.n DESC`,
    params,
  )
  const of = (facet: string) => rows.filter((r) => r.facet === facet)
  const total = of('total')[0]
  const count = total?.n ?? 0
  const list = (entries: string[]) => (entries.length ? entries.slice(0, TOP).join(', ') + (entries.length > TOP ? `, … (${formatCount(entries.length)} in all)` : '') : null)

  const sampleParams: unknown[] = []
  const sample = selectionWhere(sampleParams)
  sampleParams.push(SAMPLES)
  const { rows: sampleIds } = await sql.query<{ id: string }>(
    `SELECT d.id::text FROM ${MESSAGES_FROM} ${sample.searchJoin} WHERE ${sample.where}
     ORDER BY ${listOrderSql(selectionFilter(selection))} LIMIT $${sampleParams.length}`,
    sampleParams,
  )
  const samples = await rowsById({ sql, ids: sampleIds.map((r) => r.id) })

  const criteria =
    'ids' in selection
      ? [`${formatCount(selection.ids.length)} selected message${selection.ids.length === 1 ? '' : 's'}`]
      : filterParams(selectionFilter(selection)).map(([k, v]) => `${FILTER_LABELS[k as keyof MessageFilter] ?? k} ${inlineCode(redactor.text(v))}`)
  const backLink = 'ids' in selection ? null : filterQuery(selectionFilter(selection), redactor)
  const back = backLink ? `${baseUrl}/messages${backLink.query}` : null

  return lines(
    `## Dead letters: ${formatCount(count)} message${count === 1 ? '' : 's'}${criteria.length ? ` (${criteria.join(', ')})` : ''}`,
    '',
    back ? `In Lazarus: ${link(back, back)}${backLink?.omitted ? ' (filter values that hold secrets are left out)' : ''}` : null,
    back ? '' : null,
    bullet('Messages', formatCount(count)),
    bullet('Time range', total?.first_at ? `${escapeInline(total.first_at)} → ${escapeInline(total.last_at ?? '')}` : null),
    bullet('Error groups', list(of('group').map((r) => `${link(`#${r.group_id} ${redactor.text(r.title ?? '')}`, `${baseUrl}/groups/${r.group_id}`)} (${formatCount(r.n)})`))),
    bullet('Sources', list(of('source').map((r) => `${inlineCode(r.queue ?? '?')} (${formatCount(r.n)})`))),
    bullet('Services and versions', list(of('version').map((r) => `${r.service ? inlineCode(r.service) : '_(no service)_'} ${r.service_version ? inlineCode(r.service_version) : ''} (${formatCount(r.n)})`.replace('  ', ' ')))),
    bullet('Failure kinds', list(of('kind').map((r) => `${escapeInline(r.failure_kind ?? '')} (${formatCount(r.n)})`))),
    bullet('Statuses', list(of('status').map((r) => `${escapeInline(r.status ?? '')} (${formatCount(r.n)})`))),
    '',
    `### Sample messages (${samples.length} of ${formatCount(count)})`,
    ...samples.flatMap((row) => ['', messageSection(row, options, '####')]),
    '',
    '---',
    footer(options),
    '',
  )
}
