import 'server-only'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import { xDeathDto } from '@/lib/server/messages/to-message-dto'
import type { Redactor } from '@/lib/server/redaction/redactor'
import { redactedBody, storedXDeath, type ExportRow } from './export-rows'

/** A stored JSON column after redaction, as JSON text: the stored text itself when nothing was redacted. */
export function redactedJson<T>(raw: string, redact: (value: T) => T): { value: T; json: string } {
  const parsed = JSON.parse(raw) as T
  const value = redact(parsed)
  return { value, json: value === parsed ? raw : JSON.stringify(value) }
}

/** The x-death summary of GET /api/messages/{id}; empty for a stored value of unexpected shape. */
function xDeathSummary(value: TypedValue | null): ReturnType<typeof xDeathDto> {
  try {
    return xDeathDto(value)
  } catch {
    return []
  }
}

const str = (text: string | null) => (text === null ? 'null' : JSON.stringify(text))
const redactedString = (redactor: Redactor, text: string | null) => (text === null ? 'null' : JSON.stringify(redactor.text(text)))

/**
 * One JSON Lines record: every stored field, redacted.
 * - `body.base64` is the body byte for byte (after redaction), `body.text` its UTF-8 view (null for binary bodies);
 *   `body.masked` says why the whole body was replaced (a content encoding that does not decode, or inflates past
 *   64 MiB), null when it was not.
 * - `headersTyped` is the stored typed header table (exact AMQP types, see lib/server/platform/broker/typed-fields.ts);
 *   GET /api/messages/{id} gives the plain view of the same headers.
 * - `xDeathTyped` is the stored x-death value, `xDeath` its summary as the API shows it.
 *
 * Written as text rather than through one JSON.stringify of an object: stored JSON that nothing redacted is spliced
 * in as it is, and the export spends its time on redaction instead of re-serialising (bench:export).
 */
export function toJsonLine(row: ExportRow, redactor: Redactor): string {
  const text = (value: string | null) => redactedString(redactor, value)
  const body = redactedBody(row, redactor)
  const headers = redactedJson<TypedTable>(row.headers_json, redactor.typedTable)
  // The x_death column is the headers' own x-death entry: taken from the redacted headers, not parsed a second time.
  const xDeath = storedXDeath(headers.value)
  const properties = redactedJson<Record<string, unknown>>(row.properties_json, redactor.json).json
  const routingKeys = row.origin_routing_keys ? `[${row.origin_routing_keys.map(text).join(',')}]` : '[]'
  return (
    `{"id":"${row.id}","source":{"id":"${row.source_id}","vhost":${str(row.source_vhost)},"queue":${str(row.source_queue)}},` +
    `"status":${str(row.status)},"statusReason":${text(row.status_reason)},"statusChangedAt":${str(row.status_changed_at)},` +
    `"statusChangedBy":${str(row.status_changed_by)},"failedAt":"${row.failed_at}","firstDeathAt":${str(row.first_death_at)},` +
    `"lastDeathAt":${str(row.last_death_at)},"ingestedAt":"${row.ingested_at}","seenCount":${row.seen_count},"fingerprint":"${row.fingerprint}",` +
    `"delivery":{"exchange":${str(row.delivery_exchange)},"routingKey":${text(row.delivery_routing_key)},"redelivered":${row.redelivered}},` +
    `"deathReason":${str(row.death_reason)},"attempts":${row.attempts ?? 'null'},"xDeath":${JSON.stringify(xDeathSummary(xDeath))},` +
    `"origin":{"exchange":${str(row.origin_exchange)},"routingKeys":${routingKeys},"queue":${str(row.origin_queue)}},` +
    `"error":{"type":${text(row.error_type)},"message":${text(row.error_message)},"stack":${text(row.error_stack)}},` +
    `"failureKind":${str(row.failure_kind)},"service":${str(row.service)},"serviceVersion":${str(row.service_version)},` +
    `"framework":${str(row.framework)},"entityKey":${text(row.entity_key)},"group":{"id":"${row.group_id}","title":${text(row.group_title)}},` +
    `"flags":${JSON.stringify(row.flags)},"lineage":{"originId":${str(row.lineage_origin_id)},"replayId":${str(row.lineage_replay_id)},` +
    `"replayCount":${row.replay_count}},"heldFrom":${str(row.held_from)},"properties":${properties},"headersTyped":${headers.json},` +
    `"xDeathTyped":${xDeath === null ? 'null' : JSON.stringify(xDeath)},"body":{"size":${row.body_size},"encoding":${str(row.body_encoding)},"redacted":${body.redacted},"masked":${str(body.masked)},` +
    `"base64":"${body.bytes.toString('base64')}","text":${str(body.text)}}}`
  )
}
