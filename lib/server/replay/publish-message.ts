import 'server-only'
import type { Options } from '@/lib/server/platform/broker/amqplib'
import { encodeForPublish, encodeTypedTable, type EncodedTable, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { isTraceHeader, newTraceparent, readTraceContext } from '@/lib/server/traces/trace-context'

/**
 * Broker-owned headers a replay never sends back (docs/rabbitmq.md#safe-replay): RabbitMQ 4.x ignores a client's
 * x-death and replaces it at the next death, older brokers feed it to cycle detection, a stale copy misleads
 * consumers, and a leftover CC re-routes the message to extra queues.
 */
export const BROKER_HEADERS: ReadonlySet<string> = new Set([
  'x-death',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-first-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
  'x-last-death-exchange',
  'x-delivery-count',
  'x-acquired-count',
  'CC',
  'BCC',
])

/** Headers Lazarus itself stamps; a previous replay's values are replaced, never repeated. */
export const LAZARUS_HEADERS: ReadonlySet<string> = new Set([
  'x-lazarus-origin-id',
  'x-lazarus-replay-id',
  'x-lazarus-replay-count',
  'x-lazarus-replayed-by',
  'x-lazarus-release',
  'x-lazarus-revision',
  'x-lazarus-origin-trace',
])
/** What a pause guard adds to a message it holds (packages/guard/src/protocol.ts); never sent back. */
const HELD_HEADER_PREFIX = 'x-lazarus-held-'
/** Lazarus' own namespace: LAZARUS_HEADERS, the held headers, and whatever Lazarus writes on a stored row. */
const LAZARUS_HEADER_PREFIX = 'x-lazarus-'
const BROKER_HEADERS_LOWER: ReadonlySet<string> = new Set([...BROKER_HEADERS].map((name) => name.toLowerCase()))

/**
 * Who owns a header a revision may not set (docs/ARCHITECTURE.md#revisions): the broker's headers a replay strips
 * (BROKER_HEADERS) and Lazarus' `x-lazarus-*`, which a replay strips or stamps itself. A forged value would show in the
 * revision and its diff and never go out. Matched case-insensitively, so `X-Death` is refused as `x-death` is.
 */
export function reservedHeaderOwner(name: string): 'the broker' | 'Lazarus' | null {
  const lower = name.toLowerCase()
  if (lower.startsWith(LAZARUS_HEADER_PREFIX)) return 'Lazarus'
  return BROKER_HEADERS_LOWER.has(lower) ? 'the broker' : null
}

/**
 * Properties a replay keeps as stored (docs/rabbitmq.md#safe-replay). `expiration` is never restored; `userId` only
 * for the same user.
 */
const KEPT_PROPERTIES = ['contentType', 'contentEncoding', 'deliveryMode', 'priority', 'correlationId', 'replyTo', 'messageId', 'timestamp', 'type', 'appId'] as const

/** AMQP's header table must fit amqplib's 64 KiB encoding buffer, length prefix included. */
export const MAX_HEADER_TABLE_BYTES = 65536 - 4

export type StoredMessage = {
  id: string
  body: Buffer
  properties: Record<string, unknown>
  headers: TypedTable
  lineageOriginId: string | null
  replayCount: number
}

/**
 * What a publish is: a replay of a dead letter or of its frozen revision (lineage headers added, x-lazarus-revision
 * for a revision; x-lazarus-release too when its entity is paused, so the pause guard lets it through, docs/ARCHITECTURE.md#pause-hold-release) or a release of a held message
 * back to the queue it was taken from (x-lazarus-release added; x-death and the rest of its headers kept, since it
 * never died).
 */
export type ReplayStamp =
  | {
    kind: 'replay'; replayId: string; actor: string; pauseId?: string | null; revision?: number | null
    /** Start a new trace (the job's newTrace): a fresh traceparent instead of the stored trace headers (docs/ARCHITECTURE.md#traces). */
    newTrace?: boolean
  }
  | { kind: 'release'; replayId: string; pauseId: string }

const str = (v: string) => ({ t: 'S', v }) as const

/**
 * The header table a replay publishes, in the stored order, stripped and stamped. A replay keeps the message's trace
 * headers, or with `newTrace` drops them (traceparent, tracestate, B3, uber-trace-id) for a fresh traceparent; either
 * way x-lazarus-origin-trace names the trace the message failed in, so the consumer's span can link back to it.
 */
export function replayHeaders(message: Pick<StoredMessage, 'id' | 'headers' | 'lineageOriginId' | 'replayCount'>, stamp: ReplayStamp): TypedTable {
  const out: TypedTable = {}
  const newTrace = stamp.kind === 'replay' && stamp.newTrace === true
  for (const key of Object.keys(message.headers)) {
    if (LAZARUS_HEADERS.has(key) || key.startsWith(HELD_HEADER_PREFIX)) continue
    if (newTrace && isTraceHeader(key)) continue
    if (BROKER_HEADERS.has(key) && (stamp.kind === 'replay' || key === 'CC' || key === 'BCC')) continue
    if (key === '__proto__') Object.defineProperty(out, key, { value: message.headers[key], enumerable: true, writable: true, configurable: true })
    else out[key] = message.headers[key]
  }
  if (stamp.kind === 'replay') {
    out['x-lazarus-origin-id'] = str(message.lineageOriginId ?? message.id)
    out['x-lazarus-replay-id'] = str(stamp.replayId)
    out['x-lazarus-replay-count'] = { t: 'l', v: String(message.replayCount + 1) }
    out['x-lazarus-replayed-by'] = str(stamp.actor)
    if (stamp.pauseId) out['x-lazarus-release'] = str(stamp.pauseId)
    // An edited message (docs/ARCHITECTURE.md#revisions): which revision went out instead of the original.
    if (stamp.revision) out['x-lazarus-revision'] = { t: 'l', v: String(stamp.revision) }
    const originTrace = readTraceContext(message.headers)
    if (originTrace) out['x-lazarus-origin-trace'] = str(originTrace.traceId)
    if (newTrace) out.traceparent = str(newTraceparent())
  } else {
    out['x-lazarus-release'] = str(stamp.pauseId)
    out['x-lazarus-replay-id'] = str(stamp.replayId)
  }
  return out
}

export function replayProperties(properties: Record<string, unknown>, amqpUser: string): Options.Publish {
  const out: Record<string, unknown> = {}
  for (const key of KEPT_PROPERTIES) {
    const value = properties[key]
    if (value !== undefined && value !== null) out[key] = value
  }
  // RabbitMQ closes the channel (406) for a user_id that is not the connection's user (validated user id).
  if (properties.userId === amqpUser) out.userId = amqpUser
  return out as Options.Publish
}

/** `options` has no headers: they go out through a PublishHeadersSlot loaded with `headers` just before publishing. */
export type PublishBuild =
  | { ok: true; content: Buffer; options: Options.Publish; headers: EncodedTable }
  | { ok: false; reason: 'too-large' | 'headers-too-large' | 'invalid-headers'; message: string }

/** Builds the publish of one stored message, or says why it cannot be published (never by killing the channel). */
export function buildPublish(message: StoredMessage, stamp: ReplayStamp, context: { amqpUser: string; maxBodyBytes: number }): PublishBuild {
  if (message.body.length > context.maxBodyBytes) {
    return { ok: false, reason: 'too-large', message: `too large: body of ${message.body.length} bytes exceeds the replay limit of ${context.maxBodyBytes}` }
  }
  let headers
  try {
    headers = encodeForPublish(replayHeaders(message, stamp))
  } catch (error) {
    return { ok: false, reason: 'invalid-headers', message: `cannot replay: stored headers cannot be encoded (${(error as Error).message.slice(0, 200)})` }
  }
  const options = replayProperties(message.properties, context.amqpUser)
  options.mandatory = true
  return { ok: true, content: message.body, options, headers }
}

/** Exact size of the header table a replay would send (for the plan's headers-too-large check). */
export function replayHeaderBytes(message: Pick<StoredMessage, 'id' | 'headers' | 'lineageOriginId' | 'replayCount'>, actor: string): number {
  return encodeTypedTable(replayHeaders(message, { kind: 'replay', replayId: '00000000-0000-0000-0000-000000000000', actor })).length
}
