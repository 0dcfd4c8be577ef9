import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { listOrderSql, MESSAGES_FROM, messageFilterSql } from '@/lib/server/selection/message-filter-sql'
import { pointerOf } from '@/lib/shared/json-pointer'
import type { BodyFieldDto, BodyFieldsDto, BodyFieldsQuery } from '@/lib/shared/schemas/body-fields'
import { needsRedaction, type RedactedView } from './redacted-search'

/** The most recent JSON bodies read, the largest read, and the pointers offered. */
const SAMPLE_BODIES = 50
const SAMPLE_BODY_BYTES = 64 * 1024
const MAX_FIELDS = 200
/** As deep as the search index's body terms go (BODY_TERM_DEPTH): deeper fields still filter, row by row. */
const MAX_DEPTH = 8
/**
 * Leaves read per body: a 64 KiB body of small array items holds ~20,000, and 50 of them would cost every caller of
 * this autocompletion a second of CPU. The first thousand name the fields a person would filter by.
 */
const LEAVES_PER_BODY = 1_000

export type SampleBodyFieldsOptions = { db: Db; query: BodyFieldsQuery; view?: RedactedView } & SourceScope

/**
 * The pointers of the scalar fields of the most recent JSON bodies matching `query`, for the filter bar's
 * autocompletion. A caller who sees a source redacted gets the pointers of the redacted bodies: a key redaction
 * renames (an e-mail address used as a key) is offered as they see it, never as stored.
 */
export async function sampleBodyFields({ db: { sql }, query, view, ...scope }: SampleBodyFieldsOptions): Promise<BodyFieldsDto> {
  const params: unknown[] = []
  const where = messageFilterSql(query, params, allowedSourceIds(scope))
  params.push(SAMPLE_BODY_BYTES, SAMPLE_BODIES)
  // Only bodies the filters read as JSON (dead_letter_body_json, prisma/migrations/20261215000000_body_field_terms).
  const { rows } = await sql.query<{ source_id: string; body: string }>(
    `SELECT d.source_id::text, convert_from(d.body, 'UTF8') AS body FROM ${MESSAGES_FROM}
     WHERE ${where} AND d.body_encoding = 'json' AND d.body_size <= $${params.length - 1}
       AND dead_letter_body_json(d.body, d.body_encoding, d.body_size) IS NOT NULL
     ORDER BY ${listOrderSql({})} LIMIT $${params.length}`,
    params,
  )
  const fields = new Map<string, { seen: number; kinds: Map<BodyFieldDto['kind'], number> }>()
  for (const row of rows) {
    const text = needsRedaction(view, row.source_id) ? view.redactor.bodyText(row.body, 'json') : row.body
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      continue
    }
    let leaves = 0
    for (const [pointer, kind] of scalarFields(body)) {
      if (++leaves > LEAVES_PER_BODY) break
      const field = fields.get(pointer) ?? { seen: 0, kinds: new Map() }
      field.seen++
      field.kinds.set(kind, (field.kinds.get(kind) ?? 0) + 1)
      fields.set(pointer, field)
    }
  }
  const ranked = [...fields].map(([pointer, { seen, kinds }]) => ({ pointer, seen, kind: [...kinds].sort((a, b) => b[1] - a[1])[0][0] }))
  ranked.sort((a, b) => b.seen - a.seen || a.pointer.localeCompare(b.pointer))
  return { sampled: rows.length, fields: ranked.slice(0, MAX_FIELDS) }
}

/** Each scalar leaf of a JSON value as its pointer and JSON type, at most MAX_DEPTH levels deep. */
function* scalarFields(value: unknown, tokens: string[] = []): Generator<[string, BodyFieldDto['kind']]> {
  if (value === null) {
    if (tokens.length > 0) yield [pointerOf(tokens), 'null']
    return
  }
  if (typeof value !== 'object') {
    if (tokens.length > 0) yield [pointerOf(tokens), typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'string']
    return
  }
  if (tokens.length >= MAX_DEPTH) return
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, i) => [String(i), item]) : Object.entries(value)
  for (const [key, item] of entries) yield* scalarFields(item, [...tokens, key])
}
