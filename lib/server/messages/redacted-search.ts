import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Redactor } from '@/lib/server/redaction/redactor'

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

export type SearchedFields = { errorType: string | null; errorMessage: string | null; entityKey: string | null; bodyText: string | null; bodyEncoding: string }

/** Whether the filter still matches once the fields are redacted: `q` as a case-insensitive substring, `entity` exactly. */
export function matchesRedacted(fields: SearchedFields, filter: { q?: string; entity?: string }, redactor: Redactor): boolean {
  if (filter.entity !== undefined && (fields.entityKey === null || redactor.text(fields.entityKey) !== filter.entity)) return false
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
 * The ids among `ids` whose searched fields still match after redaction (one read of those fields). Used for pages
 * of the message list and for counts; exports check the rows they already hold.
 */
export type IdsMatchingRedactedOptions = { sql: Sql; ids: string[]; filter: { q?: string; entity?: string }; redactor: Redactor }

export async function idsMatchingRedacted({ sql, ids, filter, redactor }: IdsMatchingRedactedOptions): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const { rows } = await sql.query<{ id: string; error_type: string | null; error_message: string | null; entity_key: string | null; body_text: string | null; body_encoding: string }>(
    `SELECT d.id::text, d.error_type, left(d.error_message, ${SEARCHED_CHARS}) AS error_message, d.entity_key,
            CASE WHEN d.body_encoding <> 'binary' THEN left(d.body_preview, ${SEARCHED_CHARS}) END AS body_text, d.body_encoding
       FROM dead_letters d WHERE d.id = ANY($1::bigint[])`,
    [ids],
  )
  const kept = new Set<string>()
  for (const r of rows) {
    const fields = { errorType: r.error_type, errorMessage: r.error_message, entityKey: r.entity_key, bodyText: r.body_text, bodyEncoding: r.body_encoding }
    if (matchesRedacted(fields, filter, redactor)) kept.add(r.id)
  }
  return kept
}
