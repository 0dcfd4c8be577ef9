import 'server-only'
import { isArrayIndex, pointerTokens } from '@/lib/shared/json-pointer'
import { subjectFilterRegex } from '@/lib/shared/nats-subjects'
import type { FieldCondition } from '@/lib/shared/schemas/field-filter'
import type { MessageFilter } from '@/lib/shared/schemas/message-filter'

/**
 * The text `q` searches: error type, the first 512 characters of the error message, entity key and the first 512
 * of the body's text view (dead_letter_search_text_v2, prisma/migrations/20261201020000_search_index). The
 * background indexer stores it in dead_letter_search, whose trigram index serves rare terms; rows still in the
 * search backlog are evaluated directly, so a message is findable from the moment it is stored.
 */
export const searchTextSql = (alias: string) =>
  `dead_letter_search_text_v2(${alias}.error_type, ${alias}.error_message, ${alias}.entity_key, ${alias}.body_preview)`

/** Ids of every stored message whose search text matches the ILIKE pattern in parameter `p`. */
export const searchMatchesSql = (p: string) =>
  `SELECT dead_letter_id FROM dead_letter_search WHERE text ILIKE ${p}
   UNION ALL
   SELECT backlog_d.id FROM search_backlog backlog JOIN dead_letters backlog_d ON backlog_d.id BETWEEN backlog.first_id AND backlog.last_id
   WHERE ${searchTextSql('backlog_d')} ILIKE ${p}`

/** The search text of `alias`'s row: indexed when it is, computed when it is not yet (join `searchAlias` LEFT). */
export const rowSearchTextSql = (alias: string, searchAlias: string) => `coalesce(${searchAlias}.text, ${searchTextSql(alias)})`

/** The ILIKE pattern for `q`: the term anywhere, with its own %, _ and backslash taken literally. */
export const searchPattern = (q: string) => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/**
 * The stored messages with their status: dead_letters `d` and its dead_letter_states row `st`, which only messages
 * that are not plainly dead have (STATUS_SQL). A LEFT JOIN on st's primary key, so PostgreSQL leaves st out of a query
 * that never reads it (a count without a status filter); a filter on a status other than dead makes it an inner join,
 * which walks dead_letter_states_status_idx when the query orders by listOrderSql.
 */
export const MESSAGES_FROM = 'dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id'

/**
 * The list order, newest failure first (failed_at DESC, id DESC), over MESSAGES_FROM. With a filter on a status other
 * than dead it is spelled on st's copies of both (st.failed_at is the message's, copied when the row is written), so
 * the page is a short walk of dead_letter_states_status_idx, where ordering on d's columns made PostgreSQL read every
 * message of that status and sort them (an equality of the two failed_at columns in the join gave the same order, but
 * wrecked the row estimate and with it the plan; figures: CHANGELOG.md).
 */
export function listOrderSql(filter: Pick<MessageFilter, 'status'>): string {
  return onStatusIndex(filter) ? 'st.failed_at DESC, st.dead_letter_id DESC' : 'd.failed_at DESC, d.id DESC'
}

const onStatusIndex = (filter: Pick<MessageFilter, 'status'>) => filter.status !== undefined && filter.status !== 'dead'

/** A message's status over MESSAGES_FROM: no status row means dead. */
export const STATUS_SQL = "coalesce(st.status, 'dead')"

/**
 * The order in which a statement that takes messages' status rows (replay, resolve, a superseded version, a job
 * starting late) takes them. Two such statements racing over the same messages then queue behind each other instead
 * of each holding a row the other waits for, a deadlock PostgreSQL would end by failing one with a 500.
 */
export const STATUS_LOCK_ORDER = 'ORDER BY d.id'

/** The keyset condition "after (failedAt, id) in list order", on the columns listOrderSql orders by. */
export function afterCursorSql(filter: Pick<MessageFilter, 'status'>, cursor: { failedAt: string; id: string }, params: unknown[]): string {
  return keysetSql(filter, '<', cursor, params)
}

/** `(failed_at, id) <op> (cursor)` on the columns listOrderSql orders by. */
export function keysetSql(filter: Pick<MessageFilter, 'status'>, op: '<' | '>=', cursor: { failedAt: string; id: string }, params: unknown[]): string {
  params.push(cursor.failedAt, cursor.id)
  const key = onStatusIndex(filter) ? '(st.failed_at, st.dead_letter_id)' : '(d.failed_at, d.id)'
  return `${key} ${op} ($${params.length - 1}::timestamptz, $${params.length}::bigint)`
}

/**
 * How header and property equalities (`h.tenant=acme`, `p.correlationId=…`) are matched.
 * - `index`: the ids whose equality terms hold all of them, from dead_letter_search's GIN index and the rows still in
 *   the search backlog (termMatchesSql), then the stored values checked as ever. For statements that take the
 *   matches as a set (a count, a replay plan, a resolve) and for a rare value's page.
 * - `per-row`: only the stored values, checked as the statement walks the rows (an export, a page of a common value).
 */
export type FieldMatching = 'index' | 'per-row'

/**
 * Builds the WHERE clause for the message filters of GET /api/messages (docs/ARCHITECTURE.md#the-api-contract) over
 * MESSAGES_FROM (`d`, and `st` for the status); values always travel as parameters. `sourceIds` (a caller restricted
 * to some sources) keeps only their messages; null leaves the clause as it was.
 */
export function messageFilterSql(filter: MessageFilter, params: unknown[], sourceIds: string[] | null = null, fields: FieldMatching = 'index'): string {
  const where: string[] = []
  const add = (sql: (p: string) => string, value: unknown) => {
    params.push(value)
    where.push(sql(`$${params.length}`))
  }
  if (filter.group) add((p) => `d.group_id = ${p}::bigint`, filter.group)
  if (filter.source) add((p) => `d.source_id = ${p}::bigint`, filter.source)
  if (sourceIds) add((p) => `d.source_id = ANY(${p}::bigint[])`, sourceIds)
  if (filter.status === 'dead') where.push(`${STATUS_SQL} = 'dead'`)
  // Spelled out so the planner can use the partial index dead_letter_states_status_idx (WHERE status <> 'dead').
  else if (filter.status) add((p) => `st.status = ${p} AND st.status <> 'dead'`, filter.status)
  if (filter.failureKind) add((p) => `d.failure_kind = ${p}`, filter.failureKind)
  if (filter.service) add((p) => `d.service = ${p}`, filter.service)
  if (filter.serviceVersion) add((p) => `d.service_version = ${p}`, filter.serviceVersion)
  if (filter.entity) add((p) => `d.entity_key = ${p}`, filter.entity)
  // dead_letters_trace_idx; messages stored before trace ids were read at ingest have none (docs/ARCHITECTURE.md#traces).
  if (filter.traceId) add((p) => `d.trace_id = ${p}`, filter.traceId)
  // JetStream (docs/jetstream.md#sources): a stream is its sources, so the source index narrows; a subject is the first
  // origin routing key of a JetStream source's row, compared exactly or by its wildcards.
  if (filter.stream) add((p) => `d.source_id IN (SELECT id FROM sources WHERE kind = 'jetstream' AND stream = ${p})`, filter.stream)
  if (filter.subject) {
    const regex = subjectFilterRegex(filter.subject)
    add((p) => `d.source_id IN (SELECT id FROM sources WHERE kind = 'jetstream') AND d.origin_routing_keys[1] ${regex === null ? '=' : '~'} ${p}`, regex ?? filter.subject)
  }
  if (filter.from) add((p) => `d.failed_at >= ${p}::timestamptz`, filter.from)
  if (filter.to) add((p) => `d.failed_at < ${p}::timestamptz`, filter.to)
  if (filter.q) add((p) => `d.id IN (${searchMatchesSql(p)})`, searchPattern(filter.q))
  const match = filter.match ?? []
  if (fields === 'index' && match.some(isIndexedEquality)) where.push(`d.id IN (${termMatchesSql(match.filter(isIndexedEquality), params)})`)
  for (const condition of match) where.push(fieldConditionSql(condition, params))
  return where.length ? where.join(' AND ') : 'TRUE'
}

/**
 * The properties dead_letter_terms_v1 writes terms for (prisma/migrations/20261208000000_header_terms). A property
 * added to FILTER_PROPERTIES without a new terms function and a re-index is not in the index, so it is matched row by
 * row until it is added here.
 */
export const INDEXED_PROPERTIES: readonly string[] = ['messageId', 'correlationId', 'type', 'appId', 'userId']

/**
 * The deepest body field dead_letter_body_terms_v1 writes terms for (prisma/migrations/20261215000000_body_field_terms):
 * a deeper pointer is matched row by row.
 */
const BODY_TERM_DEPTH = 8

/** The term a body with more leaves than dead_letter_body_terms_v1 indexes carries: it may hold any body value. */
const BODY_TERMS_OVERFLOW = 'b:*'

/**
 * A header's, an indexed property's or a body field's equality: the conditions dead_letter_search's terms answer (not
 * prefix, exists or x-death).
 */
export const isIndexedEquality = (condition: FieldCondition): boolean =>
  condition.op === 'eq' &&
  (condition.on === 'header' ||
    (condition.on === 'property' && INDEXED_PROPERTIES.includes(condition.name)) ||
    (condition.on === 'body' && pointerTokens(condition.name).length <= BODY_TERM_DEPTH))

/**
 * Ids of every stored message that satisfies all of `conditions` (indexed equalities): those whose terms
 * (dead_letter_terms_v1, prisma/migrations/20261208000000_header_terms) hold each condition's term, and the rows still
 * in the search backlog whose stored values satisfy them. A term may stand for more than one value (a long value is
 * hashed), so the caller still checks the stored values (fieldConditionSql): the index only narrows the rows.
 */
export function termMatchesSql(conditions: FieldCondition[], params: unknown[]): string {
  const term = (condition: FieldCondition) => {
    const value = 'value' in condition ? condition.value : null
    if (condition.on === 'body') {
      params.push(condition.name, value)
      return `dead_letter_body_term($${params.length - 1}, $${params.length})`
    }
    params.push(condition.on === 'header' ? 'h' : 'p', condition.name, value)
    return `dead_letter_term($${params.length - 2}, $${params.length - 1}, $${params.length})`
  }
  // Every term of a header or property; a body field's term, or the mark of a body with more leaves than were indexed.
  const held = conditions.filter((c) => c.on !== 'body').map(term)
  const tests = conditions.filter((c) => c.on === 'body').map((c) => `terms && ARRAY[${term(c)}, '${BODY_TERMS_OVERFLOW}']`)
  if (held.length > 0) tests.unshift(`terms @> ARRAY[${held.join(', ')}]`)
  const backlogTest = conditions.map((condition) => fieldConditionSql(condition, params, 'backlog_d')).join(' AND ')
  // Each backlog range is read by its ids (OFFSET 0 keeps the subquery a per-range index scan): with an equality's
  // estimate of 0.5% of the table, the planner otherwise scanned every message to test it and then joined the few
  // backlog ranges (1.5 s at a million messages with an empty backlog).
  return `SELECT dead_letter_id FROM dead_letter_search WHERE ${tests.join(' AND ')}
   UNION ALL
   SELECT unindexed.id FROM search_backlog backlog CROSS JOIN LATERAL (
     SELECT backlog_d.id FROM dead_letters backlog_d
     WHERE backlog_d.id BETWEEN backlog.first_id AND backlog.last_id AND ${backlogTest} OFFSET 0
   ) unindexed`
}

/**
 * One header, property or x-death condition over `alias` (`d` unless said; lib/shared/schemas/field-filter.ts).
 * Headers are the typed table as stored, `{"name": {"t": tag, "v": value}}` (docs/rabbitmq.md#typed-headers): a value
 * compares as the text of its `v` (a long's decimal digits, a string as it is); a value kept only as bytes (`b64`)
 * has no text and never equals anything, though it exists. Properties are amqplib's named fields, in jsonb. x-death is
 * the header's array of tables; a condition holds when some entry satisfies it. This is the exact test, on the stored
 * values; header and property equalities are also looked up in the search index first (termMatchesSql), the other
 * conditions narrow the rows the other filters select (docs/ARCHITECTURE.md#search-index).
 */
export function fieldConditionSql(condition: FieldCondition, params: unknown[], alias = 'd'): string {
  const d = alias
  const param = (value: unknown) => {
    params.push(value)
    return `$${params.length}`
  }
  if (condition.on === 'death') {
    const field = `(e -> 'v' -> ${param(condition.name)} ->> 'v')`
    const test =
      condition.op === 'eq'
        ? `${field} = ${param(condition.value)}`
        : `${field} ~ '^[0-9]{1,18}$' AND ${field}::bigint ${condition.op === 'gte' ? '>=' : '<='} ${param(condition.value)}::bigint`
    return `EXISTS (SELECT 1 FROM json_array_elements(${xDeathEntries(d)}) e WHERE json_typeof(e -> 'v') = 'object' AND ${test})`
  }
  if (condition.on === 'body') return bodyConditionSql(condition, d, param)
  const name = param(condition.name)
  const present = condition.on === 'header' ? `json_typeof(${d}.headers) = 'object' AND ${d}.headers -> ${name} IS NOT NULL` : `${d}.properties ? ${name}`
  if (!('value' in condition)) return condition.op === 'exists' ? `(${present})` : `NOT (${present})`
  const text = condition.on === 'header' ? `(CASE WHEN json_typeof(${d}.headers) = 'object' THEN ${d}.headers -> ${name} ->> 'v' END)` : `(${d}.properties ->> ${name})`
  return condition.op === 'eq' ? `${text} = ${param(condition.value)}` : `starts_with(${text}, ${param(condition.value)})`
}

/**
 * A body field condition over `d`'s row (prisma/migrations/20261215000000_body_field_terms): the body as jsonb
 * (dead_letter_body_json: NULL unless it is JSON of at most 4 MiB, so no other body ever matches, not even "missing"),
 * the value at the pointer, and its text (dead_letter_json_text: a scalar's; objects and arrays exist but equal nothing).
 */
function bodyConditionSql(condition: Extract<FieldCondition, { on: 'body' }>, d: string, param: (value: unknown) => string): string {
  const tokens = pointerTokens(condition.name)
  const at = pointerSql('body.doc', tokens, param)
  const test = !('value' in condition)
    ? condition.op === 'exists' ? `${at} IS NOT NULL` : `body.doc IS NOT NULL AND ${at} IS NULL`
    : condition.op === 'eq' ? `dead_letter_json_text(${at}) = ${param(condition.value)}`
    : `starts_with(dead_letter_json_text(${at}), ${param(condition.value)})`
  const exact = `coalesce((SELECT ${test} FROM (SELECT dead_letter_body_json(${d}.body, ${d}.body_encoding, ${d}.body_size) AS doc) body), false)`
  // A body that has the field names each of its members as a JSON string: spelled as JSON.stringify spells it, or
  // with an escape, and then the body holds a backslash. Two byte searches spare the parse of every body that has
  // neither (most of them, when a walk or a count checks rows one by one). Not for "missing", which such bodies satisfy.
  const members = tokens.filter((token) => !isArrayIndex(token))
  if (condition.op === 'missing' || members.length === 0) return exact
  const named = members.map((token) => `position(${param(Buffer.from(JSON.stringify(token), 'utf8'))}::bytea IN ${d}.body) > 0`).join(' AND ')
  return `(CASE WHEN ${d}.body_encoding = 'json' AND (position('\\x5c'::bytea IN ${d}.body) > 0 OR (${named})) THEN ${exact} ELSE false END)`
}

/**
 * The jsonb at `tokens` under `doc`, as RFC 6901 resolves it (lib/shared/json-pointer.ts). `#>` reads a path element
 * on an array as an integer the way strtol does, so "-1" would name the last element and "01" the second; such a token
 * goes through `->` with text, which names an object's member only.
 */
function pointerSql(doc: string, tokens: string[], param: (value: unknown) => string): string {
  const loose = (token: string) => /^\s*[+-]?[0-9]+$/.test(token) && !isArrayIndex(token)
  if (!tokens.some(loose)) return `(${doc} #> ${param(tokens)}::text[])`
  return tokens.reduce((at, token) => (loose(token) ? `(${at} -> ${param(token)}::text)` : `(${at} #> ${param([token])}::text[])`), doc)
}

/** The x-death header's entries of `d`'s row, when it is an array (anything else: none). */
const xDeathEntries = (d: string) =>
  `CASE WHEN json_typeof(${d}.headers) = 'object' AND json_typeof(${d}.headers -> 'x-death' -> 'v') = 'array' THEN ${d}.headers -> 'x-death' -> 'v' END`
