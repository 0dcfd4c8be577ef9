import { fromEditable, toEditable, type TypedJson } from '@/lib/client/typed-values'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import type { CreateRevisionInput, HeaderChangeDto, MessageRevisionsDto } from '@/lib/shared/schemas/revision'

/*
 * What the message editor (message-editor.tsx) edits and how it checks and compares it, apart from how it is shown:
 * the revision an edit starts from, the header rows and the property texts, and the changes against a revision.
 * The server checks every edit again (docs/ARCHITECTURE.md#revisions); these only say early what it would refuse.
 */

export type HeaderRow = { key: number; name: string; type: string; text: string; original?: TypedJson }

/** The revision an edit starts from: the newest one, or the original (revision 0). */
export type EditBase = { revision: number; encoding: string; text: string | null; size: number; truncated: boolean; headers: Record<string, unknown>; properties: Record<string, unknown> }

export type TypedHeader = { name: string; value: TypedJson }

export type PropertyChange = { name: string; before: unknown; after: unknown }

export const PROPERTY_FIELDS = ['contentType', 'contentEncoding', 'type', 'messageId', 'correlationId', 'replyTo', 'appId', 'priority', 'deliveryMode', 'timestamp'] as const
export type PropertyField = (typeof PROPERTY_FIELDS)[number]
export type PropertyTexts = Record<PropertyField, string>
export const NUMBER_PROPERTIES: ReadonlySet<string> = new Set(['priority', 'deliveryMode', 'timestamp'])

/** The newest revision, or the original when there is none (or when `revisions.latest` is left out). */
export function baseOf(m: MessageDetailDto, r: Pick<MessageRevisionsDto, 'latest'>): EditBase {
  if (r.latest) return { revision: r.latest.revision, encoding: r.latest.body.encoding, text: r.latest.body.text, size: r.latest.body.size, truncated: false, headers: r.latest.headersTyped, properties: r.latest.properties }
  return { revision: 0, encoding: m.body.encoding, text: m.body.text, size: m.body.size, truncated: m.body.truncated, headers: m.headersTyped, properties: m.properties }
}

let nextKey = 1

/** One row per header, each remembering the value it started with. */
export const rowsOf = (headers: Record<string, unknown>): HeaderRow[] =>
  Object.entries(headers).map(([name, value]) => ({ key: nextKey++, name, ...toEditable(value as TypedJson), original: value as TypedJson }))

export const emptyHeaderRow = (): HeaderRow => ({ key: nextKey++, name: '', type: 'S', text: '' })

const isUntouched = (row: HeaderRow) => row.original !== undefined && toEditable(row.original).type === row.type && toEditable(row.original).text === row.text

/** Why a row's value is not a typed value of its type, or null. An untouched row is sent as it was stored. */
export function headerRowError(row: HeaderRow): string | null {
  if (isUntouched(row)) return null
  const parsed = fromEditable(row.type, row.text)
  return 'error' in parsed ? parsed.error : null
}

/** The header table an edit sends, or the first row that is not a typed value. */
export function headersOf(rows: HeaderRow[]): { headers: TypedHeader[] } | { error: string } {
  const headers: TypedHeader[] = []
  const names = new Set<string>()
  for (const row of rows) {
    if (!row.name) return { error: 'A header needs a name' }
    if (names.has(row.name)) return { error: `Header "${row.name}" is named twice` }
    names.add(row.name)
    if (isUntouched(row)) {
      headers.push({ name: row.name, value: row.original! })
      continue
    }
    const parsed = fromEditable(row.type, row.text)
    if ('error' in parsed) return { error: `Header "${row.name}": ${parsed.error}` }
    headers.push({ name: row.name, value: parsed.value })
  }
  return { headers }
}

/** Headers removed, changed and added from `before` to `after`, as the revision's diff lists them. */
export function headerChanges(before: Record<string, unknown>, after: TypedHeader[]): HeaderChangeDto[] {
  const out: HeaderChangeDto[] = []
  const afterMap = new Map(after.map((h) => [h.name, h.value]))
  for (const [name, value] of Object.entries(before)) {
    if (!afterMap.has(name)) out.push({ name, change: 'removed', before: value })
    else if (JSON.stringify(value) !== JSON.stringify(afterMap.get(name))) out.push({ name, change: 'changed', before: value, after: afterMap.get(name) })
  }
  for (const h of after) if (!Object.hasOwn(before, h.name)) out.push({ name: h.name, change: 'added', after: h.value })
  return out
}

const propertyTextOf = (properties: Record<string, unknown>, key: string) => (properties[key] === undefined || properties[key] === null ? '' : String(properties[key]))

/** The text each property input starts with ('' for an absent one). */
export const propertyTexts = (properties: Record<string, unknown>): PropertyTexts =>
  Object.fromEntries(PROPERTY_FIELDS.map((k) => [k, propertyTextOf(properties, k)])) as PropertyTexts

/** The properties an edit sends: only those whose text differs from the base's, null for one emptied. */
export function propertyEdits(baseProperties: Record<string, unknown>, texts: PropertyTexts): NonNullable<CreateRevisionInput['properties']> {
  const out: Record<string, string | number | null> = {}
  for (const key of PROPERTY_FIELDS) {
    if (texts[key] === propertyTextOf(baseProperties, key)) continue
    out[key] = texts[key] === '' ? null : NUMBER_PROPERTIES.has(key) ? Number(texts[key]) : texts[key]
  }
  return out as NonNullable<CreateRevisionInput['properties']>
}

/** The properties that differ between `against` and `against` with the edits applied. */
export function propertyChanges(against: Record<string, unknown>, edits: CreateRevisionInput['properties']): PropertyChange[] {
  const edited: Record<string, unknown> = { ...against }
  for (const [k, v] of Object.entries(edits ?? {})) {
    if (v === null) delete edited[k]
    else edited[k] = v
  }
  return PROPERTY_FIELDS.filter((k) => JSON.stringify(against[k] ?? null) !== JSON.stringify(edited[k] ?? null)).map((k) => ({ name: k, before: against[k] ?? null, after: edited[k] ?? null }))
}

/** The parser's complaint about a JSON text, or null when it parses. */
export function parseJsonError(text: string): string | null {
  try {
    JSON.parse(text)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

/** A file's bytes as base64, for a binary body's replacement. */
export function base64Of(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}
