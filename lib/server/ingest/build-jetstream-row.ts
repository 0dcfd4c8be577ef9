import 'server-only'
import { createHash } from 'node:crypto'
import { typedTableToPlain, type PlainValue } from '@/lib/server/platform/broker/typed-fields'
import { classifyBody, jsonbSafe, pgText, safeNormalise, validDate } from './build-row'
import { readTraceContext } from '@/lib/server/traces/trace-context'
import { readNatsHeaderBlock } from './nats-headers'
import { computeErrorSignature } from './normalise/error-signature'
import { PREVIEW_CHARS, type FailureKind, type IngestRow } from './types'
import type { EntityKeyRule, EntityVersionRule } from '@/lib/shared/schemas/source'

/** What a JetStream failure advisory says (docs/jetstream.md#capture): which message of which consumer gave up. */
export type JetStreamFailure = {
  kind: 'max-deliveries' | 'terminated'
  /** The advisory's own id: the same failure delivered twice carries the same one. */
  advisoryId: string
  at: Date
  stream: string
  consumer: string
  streamSeq: number
  deliveries: number
  /** `term(reason)`'s reason; nats-server 2.11 and later put it in the advisory. */
  reason: string | null
}

/** The failed message as the stream still holds it; null when its limits (or a work queue's +TERM) removed it. */
export type JetStreamStoredMessage = { subject: string; seq: number; time: Date; headerBlock: Buffer | null; data: Buffer }

export type BuildJetStreamRowOptions = {
  /** The source's name, `stream/consumer` or `stream/*`: where the message failed, for grouping and display. */
  sourceLabel: string
  failure: JetStreamFailure
  message: JetStreamStoredMessage | null
  /** The advisory came again (a capture that stopped before its ack): the same row, not a second sighting. */
  redelivered: boolean
  entityKeyRule?: EntityKeyRule | null
  entityVersionRule?: EntityVersionRule | null
  maxBodyBytes: number
  now?: Date
}

/**
 * Headers NATS applications set for a failure, read as Lazarus' own `x-error-*` names when those are absent
 * (docs/jetstream.md#what-a-failure-says). `Nats-Service-Error` is the NATS services framework's (micro) error text.
 */
const NATS_ERROR_HEADERS: readonly (readonly [string, string])[] = [
  ['Nats-Error-Type', 'x-error-type'],
  ['Nats-Error-Message', 'x-error-message'],
  ['Nats-Service-Error', 'x-error-message'],
  ['Nats-Error-Stack', 'x-error-stack'],
  ['Nats-Service', 'x-service'],
  ['Nats-Service-Version', 'x-service-version'],
]

/** Lazarus' own error headers (docs/framework-headers.md#lazarus-own-headers). */
const OWN_ERROR_HEADERS = ['x-error-type', 'x-error-message', 'x-error-stack']

const REASON_TEXT: Record<JetStreamFailure['kind'], string> = { 'max-deliveries': 'max deliveries reached', terminated: 'terminated' }
/** A consumer that gave up after max_deliver is RabbitMQ's delivery limit; a +TERM is a reject without requeue. */
const KIND_BY_REASON: Record<JetStreamFailure['kind'], FailureKind> = { 'max-deliveries': 'delivery-limit', terminated: 'exhausted' }

function firstText(value: PlainValue | undefined): string | null {
  if (typeof value === 'string') return value
  if (Array.isArray(value) && typeof value[0] === 'string') return value[0]
  return null
}

/** The normaliser's view of the headers: a repeated name reads as its first value under the x-error-* aliases. */
function normaliserHeaders(plain: Record<string, PlainValue>): Record<string, PlainValue> {
  const view = { ...plain }
  for (const [natsName, ownName] of NATS_ERROR_HEADERS) {
    const text = firstText(plain[natsName])
    if (text !== null && view[ownName] === undefined) view[ownName] = text
  }
  return view
}

function fingerprintOf(failure: JetStreamFailure): Buffer {
  // One failure of one message for one consumer: a redelivered advisory finds the row it stored before.
  return createHash('sha256').update(`jetstream\u0000${failure.stream}\u0000${failure.consumer}\u0000${failure.streamSeq}\u0000${failure.kind}`).digest()
}

/** Turns one captured JetStream failure into a storable row: the message's exact bytes and headers, and what failed. */
export function buildJetStreamRow(options: BuildJetStreamRowOptions): IngestRow {
  const { failure, message } = options
  const flags = new Set<string>()
  const body = message ? message.data : Buffer.alloc(0)
  if (!message) flags.add('message-gone')
  const { table, keepBlock } = readNatsHeaderBlock(message?.headerBlock ?? null)
  if (keepBlock) flags.add('nats-header-block-kept')
  const msgIdHeader = table['Nats-Msg-Id']
  const messageId = msgIdHeader?.t === 'S' && 'v' in msgIdHeader ? msgIdHeader.v : null
  const properties = {
    subject: message?.subject ?? null,
    stream: failure.stream,
    streamSeq: failure.streamSeq,
    consumer: failure.consumer,
    deliveries: failure.deliveries,
    advisory: failure.kind,
    advisoryId: failure.advisoryId,
    ...(message && { publishedAt: message.time.toISOString() }),
    ...(failure.reason !== null && { terminateReason: failure.reason }),
    ...(messageId !== null && { messageId }),
    ...(keepBlock && message?.headerBlock && { headerBlock: message.headerBlock.toString('base64') }),
  }
  const propertiesJson = jsonbSafe(properties, flags)
  const headersJson = jsonbSafe(table, flags)
  const { encoding, text, json } = classifyBody(body)
  if (body.length > options.maxBodyBytes) flags.add('oversized')
  if (encoding === 'text' && (text?.trimStart()[0] === '{' || text?.trimStart()[0] === '[')) flags.add('malformed-json')

  const derived = safeNormalise({
    queue: options.sourceLabel,
    exchange: '',
    routingKey: message?.subject ?? '',
    redelivered: options.redelivered,
    properties: messageId === null ? {} : { messageId },
    headers: normaliserHeaders(typedTableToPlain(table)),
    body,
    bodyJson: json ?? null,
    entityKeyRule: options.entityKeyRule ?? null,
    entityVersionRule: options.entityVersionRule ?? null,
  })
  for (const flag of derived.flags) flags.add(flag)
  // Nothing says what failed: group by where and why, as RabbitMQ's dead letters without error metadata are.
  const signature = derived.errorType === null && derived.errorMessage === null && derived.errorStack === null
    ? computeErrorSignature({ errorType: null, errorMessage: null, frames: [], fallback: { queue: options.sourceLabel, reason: REASON_TEXT[failure.kind], messageType: null } })
    : { signature: derived.signature, title: derived.title, messagePattern: derived.messagePattern, frames: derived.topFrames ?? [] }
  const failedAt = validDate(failure.at) ?? options.now ?? new Date()
  const subject = message?.subject ?? null
  const trace = readTraceContext(table)

  return {
    fingerprint: fingerprintOf(failure),
    redelivered: options.redelivered,
    body,
    bodyEncoding: encoding,
    bodyPreview: text === null ? null : text.slice(0, PREVIEW_CHARS),
    propertiesJson,
    headersJson,
    deliveryExchange: '',
    deliveryRoutingKey: pgText(subject) ?? '',
    deathReason: failure.kind,
    attempts: failure.deliveries,
    originExchange: null,
    originRoutingKeys: subject === null ? [] : [pgText(subject, 1024) ?? ''],
    originQueue: pgText(options.sourceLabel, 1024),
    firstDeathAt: null,
    lastDeathAt: failedAt,
    failedAt,
    errorType: pgText(derived.errorType, 1024),
    errorMessage: pgText(derived.errorMessage ?? failure.reason, 64 * 1024),
    errorStack: pgText(derived.errorStack, 64 * 1024),
    failureKind: derived.failureKind === 'unknown' ? KIND_BY_REASON[failure.kind] : derived.failureKind,
    service: pgText(derived.service, 256),
    serviceVersion: pgText(derived.serviceVersion, 128),
    // The aliases make the normaliser see Lazarus' own headers; only headers the application set make it 'lazarus'.
    framework: derived.framework === 'unknown' || (derived.framework === 'lazarus' && !OWN_ERROR_HEADERS.some((h) => h in table)) ? 'nats' : derived.framework,
    entityKey: pgText(derived.entityKey, 1024),
    entityVersion: derived.entityVersion ?? null,
    signature: signature.signature,
    title: pgText(signature.title, 300) ?? '',
    messagePattern: pgText(signature.messagePattern, 1024),
    topFrames: signature.frames.map((f) => pgText(f, 512) ?? ''),
    flags: [...flags].map((f) => pgText(f, 200) ?? ''),
    lineageOriginId: pgText(derived.lineage.originId, 128),
    replayCount: derived.lineage.replayCount,
    lineageReplayId: pgText(derived.lineage.replayId, 128),
    status: 'dead',
    traceId: trace?.traceId ?? null,
    spanId: trace?.spanId ?? null,
  }
}
