import 'server-only'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import type { Redactor } from '@/lib/server/redaction/redactor'
import type { DetailRow, SummaryRow } from './to-message-dto'

/**
 * What a caller without raw access (a viewer) sees of a message: the same redaction the exports apply
 * (docs/security.md, "Roles"), to every field that holds message content. Status, times, counts, ids, sources and
 * the error group stay as they are.
 */
export function redactSummaryRow<R extends SummaryRow>(row: R, redactor: Redactor): R {
  if (!redactor.active) return row
  const text = (value: string | null) => (value === null ? null : redactor.text(value))
  return {
    ...row,
    preview: row.preview === null ? null : redactor.bodyText(row.preview, row.body_encoding),
    error_type: text(row.error_type),
    error_message: text(row.error_message),
    entity_key: text(row.entity_key),
  }
}

export function redactDetailRow(row: DetailRow, redactor: Redactor): DetailRow {
  if (!redactor.active) return row
  const text = (value: string | null) => (value === null ? null : redactor.text(value))
  const stored = Buffer.from(row.body)
  const contentEncoding = (row.properties as { contentEncoding?: unknown } | null)?.contentEncoding
  // A compressed or base64 body hides its content from every rule: decoded, redacted and encoded again, as in exports.
  const body = (contentEncoding !== undefined ? redactor.encodedBody(stored, contentEncoding)?.bytes : undefined) ?? redactor.body(stored, row.body_encoding)
  return {
    ...redactSummaryRow(row, redactor),
    body,
    properties: redactor.json(row.properties),
    headers: redactor.typedTable(row.headers as TypedTable),
    x_death: row.x_death === null ? null : (redactor.typedValue(row.x_death as TypedValue) as DetailRow['x_death']),
    full_error_message: text(row.full_error_message),
    error_stack: text(row.error_stack),
    group_title: redactor.text(row.group_title),
    origin_routing_keys: row.origin_routing_keys?.map((k) => redactor.text(k)) ?? null,
    delivery_routing_key: redactor.text(row.delivery_routing_key),
    status_reason: text(row.status_reason),
  }
}
