import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { pointerTokens, resolvePointer } from '@/lib/shared/json-pointer'
import { comparesValue, type FieldCondition } from '@/lib/shared/schemas/field-filter'
import { readTraceContext } from '@/lib/server/traces/trace-context'

/**
 * For callers who see messages redacted (a viewer, or an operator of other sources): the text search (`q`) and the
 * entity filter must not match inside a masked value, or a viewer could recover a password one character at a time
 * with `q=hunter`, `q=hunter2`, … (docs/security.md, "Roles"). The database finds candidates as usual; each one of a
 * source the caller has no raw access to is then kept only if the term is still there after redaction.
 */
export type RedactedView = {
  /** Sources whose messages the caller sees raw (null: all of them, and nothing here applies). */
  rawSourceIds: string[] | null
  redactor: Redactor
}

export const needsRedaction = (view: RedactedView | undefined, sourceId: string): view is RedactedView =>
  view !== undefined && view.rawSourceIds !== null && !view.rawSourceIds.includes(sourceId)

/** The characters of each field the text search reads (selection/message-filter-sql.ts: the first 512 of message and body). */
const SEARCHED_CHARS = 512

export type SearchedFields = {
  errorType: string | null
  errorMessage: string | null
  entityKey: string | null
  bodyText: string | null
  bodyEncoding: string
  /** The stored headers and properties as JSON text: read only when the filter compares a header or property value. */
  headersJson?: string | null
  propertiesJson?: string | null
  /** The whole body's text when it is JSON (bodyEncoding `json`): read only when the filter compares a body field. */
  bodyJson?: string | null
}

/** The filters that match inside values redaction may mask: the text search, the entity and field value conditions. */
export type RedactableFilter = { q?: string; entity?: string; match?: FieldCondition[]; traceId?: string }

/** Whether a filter could match inside a masked value, so rows a caller sees redacted must be checked (matchesRedacted). */
export const filtersMaskedText = (filter: RedactableFilter) =>
  filter.q !== undefined || filter.entity !== undefined || filter.traceId !== undefined || (filter.match ?? []).some(comparesValue)

/**
 * Whether the filter still matches once the fields are redacted: `q` as a case-insensitive substring, `entity` exactly,
 * and a header, property or x-death value condition only where redaction leaves that value as it is (docs/security.md,
 * "The search oracle"): a header redaction masks, even in part, can be tested for exists and not exists only. The
 * database has already checked the stored values.
 */
export function matchesRedacted(fields: SearchedFields, filter: RedactableFilter, redactor: Redactor): boolean {
  if (filter.entity !== undefined && (fields.entityKey === null || redactor.text(fields.entityKey) !== filter.entity)) return false
  if (!fieldValuesUnmasked(fields, filter.match ?? [], redactor)) return false
  // A trace id is read from the headers: it matches only if the headers the caller sees still carry it.
  if (filter.traceId !== undefined && readTraceContext(redactor.typedTable(parseObject(fields.headersJson) as TypedTable))?.traceId !== filter.traceId) return false
  if (!filter.q) return true
  const term = filter.q.toLowerCase()
  const within = (value: string | null, redact: (v: string) => string) => value !== null && redact(value.slice(0, SEARCHED_CHARS)).toLowerCase().includes(term)
  return (
    within(fields.errorType, redactor.text) ||
    within(fields.errorMessage, redactor.text) ||
    within(fields.entityKey, redactor.text) ||
    within(fields.bodyText, (v) => redactor.bodyText(v, fields.bodyEncoding))
  )
}

/**
 * Whether every value a condition compares survives redaction unchanged (x-death conditions: the whole x-death header;
 * a body field: its value in the body as redacted).
 */
function fieldValuesUnmasked(fields: SearchedFields, match: FieldCondition[], redactor: Redactor): boolean {
  const compared = match.filter(comparesValue)
  if (compared.length === 0) return true
  const headers = parseObject(fields.headersJson) as TypedTable
  const properties = parseObject(fields.propertiesJson)
  const bodies = compared.some((c) => c.on === 'body') ? bodyViews(fields, redactor) : null
  return compared.every((condition) => {
    if (condition.on === 'body') {
      // The field as the caller sees it must be the stored one: a value redaction masks, even in part (or whose key
      // it renames), compares as nothing.
      if (!bodies) return false
      const tokens = pointerTokens(condition.name)
      const value = resolvePointer(bodies.stored, tokens)
      return value !== undefined && JSON.stringify(resolvePointer(bodies.shown, tokens)) === JSON.stringify(value)
    }
    if (condition.on === 'property') {
      const value = Object.hasOwn(properties, condition.name) ? properties[condition.name] : undefined
      return value !== undefined && JSON.stringify(redactor.json({ [condition.name]: value })[condition.name]) === JSON.stringify(value)
    }
    const name = condition.on === 'header' ? condition.name : 'x-death'
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined
    return value !== undefined && JSON.stringify(redactor.typedTable({ [name]: value })[name]) === JSON.stringify(value)
  })
}

/** A JSON body parsed as stored and as redaction shows it; null when it is not JSON (then no body field matches). */
function bodyViews(fields: SearchedFields, redactor: Redactor): { stored: unknown; shown: unknown } | null {
  if (fields.bodyEncoding !== 'json' || !fields.bodyJson) return null
  try {
    return { stored: JSON.parse(fields.bodyJson), shown: JSON.parse(redactor.bodyText(fields.bodyJson, 'json')) }
  } catch {
    return null
  }
}

const parseObject = (text: string | null | undefined): Record<string, unknown> => {
  const value: unknown = text ? JSON.parse(text) : null
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

/**
 * The ids among `ids` whose searched fields still match after redaction (one read of those fields). Used for pages
 * of the message list and for counts; exports check the rows they already hold.
 */
export type IdsMatchingRedactedOptions = { sql: Sql; ids: string[]; filter: RedactableFilter; redactor: Redactor }

export async function idsMatchingRedacted({ sql, ids, filter, redactor }: IdsMatchingRedactedOptions): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const fieldValues = (filter.match ?? []).some(comparesValue) || filter.traceId !== undefined
  const { rows } = await sql.query<{
    id: string; error_type: string | null; error_message: string | null; entity_key: string | null; body_text: string | null; body_encoding: string
    headers_json: string | null; properties_json: string | null; body_json: string | null
  }>(
    `SELECT d.id::text, d.error_type, left(d.error_message, ${SEARCHED_CHARS}) AS error_message, d.entity_key,
            CASE WHEN d.body_encoding <> 'binary' THEN left(d.body_preview, ${SEARCHED_CHARS}) END AS body_text, d.body_encoding,
            CASE WHEN $2 THEN d.headers::text END AS headers_json, CASE WHEN $2 THEN d.properties::text END AS properties_json,
            CASE WHEN $3 AND dead_letter_body_json(d.body, d.body_encoding, d.body_size) IS NOT NULL THEN convert_from(d.body, 'UTF8') END AS body_json
       FROM dead_letters d WHERE d.id = ANY($1::bigint[])`,
    // The whole body only where a body field is compared and the database read it as JSON (dead_letter_body_json).
    [ids, fieldValues, (filter.match ?? []).some((c) => c.on === 'body' && comparesValue(c))],
  )
  const kept = new Set<string>()
  for (const r of rows) {
    const fields = {
      errorType: r.error_type, errorMessage: r.error_message, entityKey: r.entity_key, bodyText: r.body_text, bodyEncoding: r.body_encoding,
      headersJson: r.headers_json, propertiesJson: r.properties_json, bodyJson: r.body_json,
    }
    if (matchesRedacted(fields, filter, redactor)) kept.add(r.id)
  }
  return kept
}
