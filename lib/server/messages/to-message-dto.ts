import 'server-only'
import { typedTableToApiJson, type TypedTable, type TypedValue } from '@/lib/server/platform/broker/typed-fields'
import type { MessageDetailDto, MessageSummaryDto, XDeathDto } from '@/lib/shared/schemas/message'
import { STATUS_SQL } from '@/lib/server/selection/message-filter-sql'

/** Characters of a text body the list shows; the stored preview (8 KiB) serves search. */
const PREVIEW_CHARS = 200

export const SUMMARY_COLUMNS = `d.id::text, d.source_id::text, s.queue AS source_queue, s.kind AS source_kind, ${STATUS_SQL} AS status, d.body_size, d.body_encoding,
  CASE WHEN d.body_encoding <> 'binary' THEN left(d.body_preview, ${PREVIEW_CHARS}) END AS preview,
  d.error_type, left(d.error_message, 500) AS error_message, d.failure_kind, d.service, d.service_version, d.framework,
  d.entity_key, d.origin_queue, d.group_id::text, d.death_reason, d.attempts, d.failed_at, d.first_death_at, d.ingested_at, d.seen_count, d.flags`

export type SummaryRow = {
  id: string; source_id: string; source_queue: string; source_kind: string; status: string; body_size: number; body_encoding: string; preview: string | null
  error_type: string | null; error_message: string | null; failure_kind: string; service: string | null
  service_version: string | null; framework: string; entity_key: string | null; origin_queue: string | null; group_id: string
  death_reason: string | null; attempts: number | null; failed_at: Date; first_death_at: Date | null
  ingested_at: Date; seen_count: number; flags: string[]
}

export type DetailRow = SummaryRow & {
  body: Uint8Array; properties: Record<string, unknown>; headers: TypedTable; x_death: TypedValue | null
  origin_exchange: string | null; origin_routing_keys: string[] | null
  delivery_exchange: string; delivery_routing_key: string; redelivered: boolean
  error_stack: string | null; full_error_message: string | null; last_death_at: Date | null; group_title: string
  lineage_origin_id: string | null; replay_count: number
  status_reason: string | null; status_changed_at: Date | null; status_changed_by: string | null; lineage_replay_id: string | null
  trace_id: string | null; span_id: string | null
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)

export function toMessageSummary(row: SummaryRow): MessageSummaryDto {
  return {
    id: row.id,
    source: { id: row.source_id, queue: row.source_queue, broker: row.source_kind === 'jetstream' ? 'jetstream' : 'rabbitmq' },
    status: row.status,
    bodySize: row.body_size,
    bodyEncoding: row.body_encoding,
    bodyPreview: row.preview,
    errorType: row.error_type,
    errorMessage: row.error_message,
    failureKind: row.failure_kind,
    service: row.service,
    serviceVersion: row.service_version,
    framework: row.framework,
    entityKey: row.entity_key,
    originQueue: row.origin_queue,
    groupId: row.group_id,
    deathReason: row.death_reason,
    attempts: row.attempts,
    failedAt: iso(row.failed_at)!,
    firstDeathAt: iso(row.first_death_at),
    ingestedAt: iso(row.ingested_at)!,
    seenCount: row.seen_count,
    flags: row.flags ?? [],
  }
}

/** The x-death entries as the API shows them, read from the typed header exactly as it was received. */
export function xDeathDto(typed: TypedValue | null): XDeathDto[] {
  const api = typed ? typedTableToApiJson({ 'x-death': typed })['x-death'] : null
  if (!Array.isArray(api)) return []
  return api.map((entry): XDeathDto => {
    const e = (entry && typeof entry === 'object' ? entry : {}) as Record<string, unknown>
    const str = (v: unknown) => (typeof v === 'string' ? v : null)
    const time = e.time as { type?: string; value?: string } | undefined
    const count = e.count as number | { value?: string } | undefined
    return {
      queue: str(e.queue),
      reason: str(e.reason),
      count: typeof count === 'number' ? count : count?.value ? Number(count.value) : null,
      exchange: str(e.exchange),
      routingKeys: Array.isArray(e['routing-keys']) ? e['routing-keys'].filter((k): k is string => typeof k === 'string') : [],
      time: time && typeof time === 'object' && typeof time.value === 'string' ? time.value : null,
    }
  })
}

export function toMessageDetail(row: DetailRow, options: { maxInlineBody: number }): MessageDetailDto {
  const body = Buffer.from(row.body)
  const truncated = body.length > options.maxInlineBody
  const inline = truncated ? body.subarray(0, options.maxInlineBody) : body
  const text = row.body_encoding === 'binary' ? null : inline.toString('utf8')
  return {
    ...toMessageSummary(row),
    errorMessage: row.full_error_message,
    body: { size: body.length, encoding: row.body_encoding, base64: inline.toString('base64'), text, truncated },
    properties: row.properties,
    headers: typedTableToApiJson(row.headers) as Record<string, unknown>,
    headersTyped: row.headers,
    xDeath: xDeathDto(row.x_death),
    origin: { exchange: row.origin_exchange, routingKeys: row.origin_routing_keys ?? [], queue: row.origin_queue },
    delivery: { exchange: row.delivery_exchange, routingKey: row.delivery_routing_key, redelivered: row.redelivered },
    error: { type: row.error_type, message: row.full_error_message, stack: row.error_stack },
    lastDeathAt: iso(row.last_death_at),
    groupTitle: row.group_title,
    lineage: { originId: row.lineage_origin_id, replayCount: row.replay_count },
    trace: null,
    statusReason: row.status_reason,
    statusChangedAt: iso(row.status_changed_at),
    statusChangedBy: row.status_changed_by,
    replays: [],
    replayedFrom: null,
    related: { sameGroup: [], sameEntity: [] },
  }
}
