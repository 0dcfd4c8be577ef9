import 'server-only'
import { createHash } from 'node:crypto'
import type { ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { getTooDeepHeaders, getTypedHeaders, getTypedHeadersError, typedTableToPlain, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { readTraceContext } from '@/lib/server/traces/trace-context'
import { asHeldRow } from './held-delivery'
import type { ParsedJson } from './normalise/delivery-body'
import { normaliseDelivery } from './normalise/normalise-delivery'
import { PREVIEW_CHARS, type IngestRow } from './types'
import type { EntityKeyRule, EntityVersionRule } from '@/lib/shared/schemas/source'
import type { AmqpProperties, DeliveryView, DerivedFailure } from './types'

/** Error texts are kept whole in the stored headers; the derived columns are capped for display and search. */
const ERROR_TEXT_CAP = 64 * 1024

export type BuildRowOptions = {
  queue: string
  message: Pick<ConsumeMessage, 'content' | 'fields' | 'properties'>
  entityKeyRule?: EntityKeyRule | null
  entityVersionRule?: EntityVersionRule | null
  maxBodyBytes: number
  status?: 'dead' | 'held'
  now?: Date
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** How a body is stored; for a JSON body also its parsed value, which the normaliser reuses instead of parsing again. */
export function classifyBody(body: Buffer): { encoding: IngestRow['bodyEncoding']; text: string | null; json?: ParsedJson } {
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    return { encoding: 'binary', text: null }
  }
  // Valid UTF-8 can still be binary (protobuf, msgpack): control characters other than whitespace give it away.
  if (/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return { encoding: 'binary', text: null }
  const first = text.trimStart()[0]
  if (first === '{' || first === '[') {
    try {
      return { encoding: 'json', text, json: { value: JSON.parse(text) as unknown } }
    } catch {
      // Malformed JSON is still readable text; the flag tells operators why it may have failed.
      return { encoding: 'text', text }
    }
  }
  return { encoding: 'text', text }
}

/** PostgreSQL text and jsonb cannot hold U+0000. */
export function pgText(value: string | null | undefined, cap = Infinity): string | null {
  if (value == null) return null
  const clean = value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value
  return clean.length > cap ? clean.slice(0, cap) : clean
}

/** Dates from untrusted headers: anything PostgreSQL cannot store (or absurd) becomes null. */
export function validDate(date: Date | null | undefined): Date | null {
  if (!date) return null
  const time = date.getTime()
  return Number.isFinite(time) && time >= 0 && time < 253_402_300_800_000 ? date : null
}

function propertiesOf(properties: ConsumeMessage['properties']): AmqpProperties {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(properties)) {
    if (key === 'headers' || value === undefined || value === null) continue
    out[key] = value
  }
  return out as AmqpProperties
}

/** JSON for jsonb: strings with NUL are kept exactly as base64 (see typed-fields), keys are escaped and flagged. */
export function jsonbSafe(value: unknown, flags: Set<string>): string {
  const text = JSON.stringify(value)
  if (!text.includes('\\u0000')) return text
  flags.add('nul-in-metadata')
  return text.replaceAll('\\u0000', '\\ufffd')
}

function fingerprintOf(queue: string, body: Buffer, propertiesJson: string, headersJson: string): Buffer {
  return createHash('sha256')
    .update(queue).update('\u0000')
    .update(propertiesJson).update('\u0000')
    .update(headersJson).update('\u0000')
    .update(body)
    .digest()
}

export function safeNormalise(view: DeliveryView): DerivedFailure {
  try {
    return normaliseDelivery(view)
  } catch (error) {
    // The normaliser is written not to throw; if it ever does, the message is still stored, flagged.
    return {
      framework: 'unknown', errorType: null, errorMessage: null, errorStack: null, failureKind: 'unknown',
      service: null, serviceVersion: null, entityKey: null, deathReason: null, attempts: null,
      origin: { exchange: null, routingKeys: [], queue: null }, xDeath: [], firstDeathAt: null, lastDeathAt: null,
      failedAt: null, signature: 'v1:unparsed', title: 'Unparsed dead letter', messagePattern: null,
      flags: [`normalise-failed: ${(error as Error).message}`.slice(0, 200)], lineage: { originId: null, replayCount: 0 },
    }
  }
}

/**
 * amqplib hands out bodies as slices of the socket's read buffers: a row that waits for its batch would keep a
 * whole 64 KiB chunk alive for a 1 KiB body. A small body gets its own copy (from Node's pool, cheap).
 */
function ownBytes(content: Buffer): Buffer {
  return content.length * 4 < content.buffer.byteLength ? Buffer.from(content) : content
}

/** Turns one delivery into a storable row: exact bytes and typed headers, plus everything derived from them. */
export function buildRow(options: BuildRowOptions): IngestRow {
  const { message, queue } = options
  const body = ownBytes(message.content)
  const flags = new Set<string>()
  const typedHeaders: TypedTable = getTypedHeaders(message.properties.headers) ?? {}
  const headerError = getTypedHeadersError(message.properties.headers)
  // The table could not be kept exactly (malformed bytes, duplicate or non-UTF-8 keys): store what was readable, say so.
  if (headerError) flags.add(`headers-lossy: ${headerError.message}`.slice(0, 200))
  // Kept exactly, but as bytes (TooDeepValue): nothing was derived from it and the page cannot show its structure.
  const tooDeep = getTooDeepHeaders(message.properties.headers)
  if (tooDeep) for (const key of tooDeep) flags.add(`header-too-deep:${key}`)
  const properties = propertiesOf(message.properties)
  const propertiesJson = jsonbSafe(properties, flags)
  const headersJson = jsonbSafe(typedHeaders, flags)
  const { encoding, text, json } = classifyBody(body)
  if (body.length > options.maxBodyBytes) flags.add('oversized')
  if (encoding === 'text' && (text?.trimStart()[0] === '{' || text?.trimStart()[0] === '[')) flags.add('malformed-json')

  const derived = safeNormalise({
    queue,
    exchange: message.fields.exchange,
    routingKey: message.fields.routingKey,
    redelivered: message.fields.redelivered,
    properties,
    headers: typedTableToPlain(typedHeaders),
    body,
    bodyJson: json ?? null,
    entityKeyRule: options.entityKeyRule ?? null,
    entityVersionRule: options.entityVersionRule ?? null,
  })
  for (const flag of derived.flags) flags.add(flag)
  const now = options.now ?? new Date()
  const failedAt = validDate(derived.failedAt) ?? now
  const trace = readTraceContext(typedHeaders)

  const row: IngestRow = {
    fingerprint: fingerprintOf(queue, body, propertiesJson, headersJson),
    redelivered: message.fields.redelivered,
    body,
    bodyEncoding: encoding,
    // Text bodies hold no U+0000 (classifyBody calls those binary); store-batch derives short previews in SQL.
    bodyPreview: text === null ? null : text.slice(0, PREVIEW_CHARS),
    propertiesJson,
    headersJson,
    deliveryExchange: pgText(message.fields.exchange) ?? '',
    deliveryRoutingKey: pgText(message.fields.routingKey) ?? '',
    deathReason: pgText(derived.deathReason, 64),
    attempts: derived.attempts === null ? null : Math.max(0, Math.min(2_147_483_647, Math.trunc(derived.attempts))),
    originExchange: pgText(derived.origin.exchange, 1024),
    originRoutingKeys: derived.origin.routingKeys.map((k) => pgText(k, 1024) ?? ''),
    originQueue: pgText(derived.origin.queue, 1024),
    firstDeathAt: validDate(derived.firstDeathAt),
    lastDeathAt: validDate(derived.lastDeathAt),
    failedAt,
    errorType: pgText(derived.errorType, 1024),
    errorMessage: pgText(derived.errorMessage, ERROR_TEXT_CAP),
    errorStack: pgText(derived.errorStack, ERROR_TEXT_CAP),
    failureKind: derived.failureKind,
    service: pgText(derived.service, 256),
    serviceVersion: pgText(derived.serviceVersion, 128),
    framework: derived.framework,
    entityKey: pgText(derived.entityKey, 1024),
    entityVersion: derived.entityVersion ?? null,
    signature: derived.signature,
    title: pgText(derived.title, 300) ?? '',
    messagePattern: pgText(derived.messagePattern, 1024),
    topFrames: (derived.topFrames ?? []).map((f) => pgText(f, 512) ?? ''),
    flags: [...flags].map((f) => pgText(f, 200) ?? ''),
    lineageOriginId: pgText(derived.lineage.originId, 128),
    replayCount: derived.lineage.replayCount,
    lineageReplayId: pgText(derived.lineage.replayId, 128),
    status: options.status ?? 'dead',
    traceId: trace?.traceId ?? null,
    spanId: trace?.spanId ?? null,
  }
  // Deliveries of a hold source are messages a pause guard parked (x-lazarus-held-from), not failures.
  return options.status === 'held' ? asHeldRow(row, typedHeaders, now) : row
}
