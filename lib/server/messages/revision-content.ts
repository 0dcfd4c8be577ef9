import 'server-only'
import { createHash } from 'node:crypto'
import { createTwoFilesPatch, diffLines } from 'diff'
import { applyPatch, type Operation } from 'rfc6902'
import { classifyBody } from '@/lib/server/ingest/build-row'
import { decodeTypedTable, encodeTypedTable, FieldTableError, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { MAX_HEADER_TABLE_BYTES, reservedHeaderOwner } from '@/lib/server/replay/publish-message'
import type { BulkEditOperation, CreateRevisionInput, HeaderChangeDto, RevisionDiffDto, TypedHeaderInput } from '@/lib/shared/schemas/revision'

/**
 * What an edit produces and how it is compared (docs/ARCHITECTURE.md#revisions): the whole message of a revision,
 * built from the revision before it (or the original) and the operator's edit, checked as the executor will publish it.
 */
export type MessageContent = { body: Buffer; headers: TypedTable; properties: Record<string, unknown> }

/** Text diffs stop being worth showing (and start costing) past this many changed lines. */
const MAX_EDIT_LENGTH = 5_000
/** A stored diff's patch text is cut here: the audit entry and the revision list carry it. */
const MAX_PATCH_CHARS = 200_000
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

const isJsonType = (properties: Record<string, unknown>) => typeof properties.contentType === 'string' && /json/i.test(properties.contentType)

function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/** A JSON body must parse: refused with the parser's own words (422). */
function assertJson(body: Buffer): void {
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new AppError('unprocessable', 'The body is not valid JSON: it is not UTF-8 text', { parseError: 'not UTF-8' })
  }
  try {
    JSON.parse(text)
  } catch (error) {
    const parseError = (error as Error).message
    throw new AppError('unprocessable', `The body is not valid JSON: ${parseError}`, { parseError })
  }
}

/** The header table of an edit, in the given order, checked by encoding it as the executor will (and in canonical form). */
export function typedTableOf(headers: TypedHeaderInput[]): TypedTable {
  const table: TypedTable = {}
  const seen = new Set<string>()
  for (const { name, value } of headers) {
    if (seen.has(name)) throw new AppError('unprocessable', `Header "${name}" is named twice`)
    seen.add(name)
    setOwn(table, name, value as TypedTable[string])
  }
  return checkedTable(table)
}

/** A revision may not set the broker's or Lazarus' own headers (422 naming the header); it may keep or drop them. */
function assertNotReserved(name: string): void {
  const owner = reservedHeaderOwner(name)
  if (owner === null) return
  const why = owner === 'Lazarus' ? 'a replay strips or stamps it itself' : 'a replay never sends it back'
  throw new AppError('unprocessable', `Header "${name}" is ${owner === 'Lazarus' ? "Lazarus'" : "the broker's"} own and cannot be set in a revision: ${why}`, { header: name })
}

/** Each header the edit adds, or whose value it changes, checked with assertNotReserved; unchanged ones pass as they were. */
function assertNoReservedChange(before: TypedTable, after: TypedTable): void {
  for (const name of Object.keys(after)) {
    const unchanged = Object.hasOwn(before, name) && JSON.stringify(before[name]) === JSON.stringify(after[name])
    if (!unchanged) assertNotReserved(name)
  }
}

function checkedTable(table: TypedTable): TypedTable {
  try {
    const encoded = encodeTypedTable(table)
    // Room for the lineage headers a replay adds.
    if (encoded.length > MAX_HEADER_TABLE_BYTES - 1024) throw new AppError('unprocessable', `The header table is ${encoded.length} bytes: too large for AMQP once the replay's headers are added`)
    // Decoding what was encoded gives the canonical typed form (extra members dropped), exactly what goes on the wire.
    return decodeTypedTable(encoded)
  } catch (error) {
    if (error instanceof FieldTableError) throw new AppError('unprocessable', `Invalid header value: ${error.message.slice(0, 300)}`)
    throw error
  }
}

export function checkBodySize(body: Buffer, maxBodyBytes: number): void {
  if (body.length > maxBodyBytes) {
    throw new AppError('too_large', `The body is ${body.length} bytes, over the replay limit of ${maxBodyBytes} (LAZARUS_REPLAY_MAX_BODY_BYTES)`, { maxBytes: maxBodyBytes })
  }
}

/** The message an edit makes of `base`; throws 422 (invalid JSON, header value or base64, a reserved header set) or 413 (body over the limit). */
export function applyEdit(base: MessageContent, input: CreateRevisionInput, maxBodyBytes: number): MessageContent {
  let body = base.body
  if (input.body) {
    if (input.body.kind === 'base64') {
      if (!BASE64.test(input.body.base64)) throw new AppError('unprocessable', 'The replacement body is not valid base64')
      body = Buffer.from(input.body.base64, 'base64')
    } else {
      body = Buffer.from(input.body.text, 'utf8')
    }
  }
  checkBodySize(body, maxBodyBytes)
  const properties: Record<string, unknown> = { ...base.properties }
  for (const [key, value] of Object.entries(input.properties ?? {})) {
    if (value === null) delete properties[key]
    else properties[key] = value
  }
  if (input.body?.kind === 'json' || (input.body && isJsonType(properties))) assertJson(body)
  const headers = input.headers ? typedTableOf(input.headers) : base.headers
  assertNoReservedChange(base.headers, headers)
  return { body, headers, properties }
}

export type BulkOutcome = { ok: true; content: MessageContent } | { ok: false; reason: string }

/**
 * Refuses (422) an operation that no message could take, before any is read: setting a reserved header, or a header
 * value that is not a valid typed value. So a selection that matches nothing gets the same answer as one that does.
 */
export function assertBulkOperation(operation: BulkEditOperation): void {
  if (operation.type !== 'set-header') return
  assertNotReserved(operation.name)
  const table: TypedTable = {}
  setOwn(table, operation.name, operation.value as TypedTable[string])
  checkedTable(table)
}

/** One message of a bulk edit (after assertBulkOperation): the edited message, or why the operation does not apply to it. */
export function applyBulkOperation(base: MessageContent, operation: BulkEditOperation, maxBodyBytes: number): BulkOutcome {
  if (operation.type === 'set-header') {
    const headers: TypedTable = { ...base.headers }
    setOwn(headers, operation.name, operation.value as TypedTable[string])
    return { ok: true, content: { ...base, headers: checkedTable(headers) } }
  }
  if (operation.type === 'remove-header') {
    if (!Object.hasOwn(base.headers, operation.name)) return { ok: false, reason: `no header "${operation.name}"` }
    const headers: TypedTable = {}
    for (const key of Object.keys(base.headers)) if (key !== operation.name) setOwn(headers, key, base.headers[key])
    return { ok: true, content: { ...base, headers } }
  }
  let text: string
  let document: unknown
  try {
    text = utf8.decode(base.body)
    document = JSON.parse(text)
  } catch {
    return { ok: false, reason: 'the body is not JSON' }
  }
  const wrapper = { doc: document }
  // rfc6902 applies in place and reports each operation; on the root, a wrapper keeps replacing it possible.
  const errors = applyPatch(wrapper, operation.patch.map((op) => ({ ...op, path: `/doc${op.path}`, ...('from' in op ? { from: `/doc${op.from}` } : {}) }) as Operation))
  const failed = errors.findIndex((e) => e !== null)
  if (failed >= 0) {
    const error = errors[failed]!
    const op = operation.patch[failed]
    const why = error.name === 'TestError' ? 'the test failed' : error.name === 'MissingError' ? 'the path does not exist' : error.message.slice(0, 120)
    return { ok: false, reason: `operation ${failed + 1} (${op.op} ${op.path}): ${why}` }
  }
  const pretty = /\n/.test(text.trim())
  const body = Buffer.from(JSON.stringify(wrapper.doc, null, pretty ? 2 : undefined) + (pretty && text.endsWith('\n') ? '\n' : ''), 'utf8')
  if (body.length > maxBodyBytes) return { ok: false, reason: 'the patched body is over LAZARUS_REPLAY_MAX_BODY_BYTES' }
  return { ok: true, content: { ...base, body } }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

function textOf(body: Buffer): string | null {
  return classifyBody(body).text
}

/** What changed from `before` to `after`: the body as a unified diff (or sizes and hashes when binary), headers and properties. */
export function diffContent(before: MessageContent, after: MessageContent): RevisionDiffDto {
  let body: RevisionDiffDto['body'] = null
  if (!before.body.equals(after.body)) {
    const [a, b] = [textOf(before.body), textOf(after.body)]
    if (a !== null && b !== null) {
      const changes = diffLines(a, b, { maxEditLength: MAX_EDIT_LENGTH })
      const added = changes?.filter((c) => c.added).reduce((n, c) => n + (c.count ?? 0), 0) ?? 0
      const removed = changes?.filter((c) => c.removed).reduce((n, c) => n + (c.count ?? 0), 0) ?? 0
      const patch = changes ? createTwoFilesPatch('before', 'after', a, b, '', '', { context: 3, maxEditLength: MAX_EDIT_LENGTH }) : undefined
      body = {
        kind: 'text',
        patch: patch === undefined ? '(too many changed lines to show)' : patch.length > MAX_PATCH_CHARS ? `${patch.slice(0, MAX_PATCH_CHARS)}\n… (cut)` : patch,
        added,
        removed,
      }
    } else {
      body = { kind: 'binary', beforeSize: before.body.length, afterSize: after.body.length, beforeSha256: sha256(before.body), afterSha256: sha256(after.body) }
    }
  }
  const headers: HeaderChangeDto[] = []
  for (const name of Object.keys(before.headers)) {
    if (!Object.hasOwn(after.headers, name)) headers.push({ name, change: 'removed', before: before.headers[name] })
    else if (JSON.stringify(before.headers[name]) !== JSON.stringify(after.headers[name])) headers.push({ name, change: 'changed', before: before.headers[name], after: after.headers[name] })
  }
  for (const name of Object.keys(after.headers)) if (!Object.hasOwn(before.headers, name)) headers.push({ name, change: 'added', after: after.headers[name] })
  const properties: RevisionDiffDto['properties'] = []
  for (const name of new Set([...Object.keys(before.properties), ...Object.keys(after.properties)])) {
    const [x, y] = [before.properties[name] ?? null, after.properties[name] ?? null]
    if (JSON.stringify(x) !== JSON.stringify(y)) properties.push({ name, before: x, after: y })
  }
  return { body, headers, properties }
}

export function isEmptyDiff(diff: RevisionDiffDto): boolean {
  return diff.body === null && diff.headers.length === 0 && diff.properties.length === 0
}

/** One line for the revision list and the audit summary. */
export function describeDiff(diff: RevisionDiffDto): string {
  const parts: string[] = []
  if (diff.body?.kind === 'text') parts.push(`body +${diff.body.added} −${diff.body.removed} lines`)
  if (diff.body?.kind === 'binary') parts.push(`body replaced (${diff.body.beforeSize} → ${diff.body.afterSize} bytes)`)
  if (diff.headers.length) parts.push(`${diff.headers.length} header${diff.headers.length === 1 ? '' : 's'} (${diff.headers.slice(0, 3).map((h) => `${h.change === 'added' ? '+' : h.change === 'removed' ? '−' : '~'}${h.name}`).join(', ')}${diff.headers.length > 3 ? ', …' : ''})`)
  if (diff.properties.length) parts.push(`${diff.properties.length} propert${diff.properties.length === 1 ? 'y' : 'ies'} (${diff.properties.map((p) => p.name).join(', ')})`)
  return parts.length ? parts.join('; ') : 'no change'
}

export function bodyEncodingOf(body: Buffer): string {
  return classifyBody(body).encoding
}
