/**
 * Contracts between the drainer, the typed AMQP codec and the normaliser.
 * Pure types and constants: safe to import anywhere on the server.
 */
import type { PlainValue } from '@/lib/server/platform/broker/typed-fields'
import type { EntityKeyRule, EntityVersionRule } from '@/lib/shared/schemas/source'

/** Headers as the normaliser sees them (PlainValue: the typed codec's lossy view). */
export type PlainHeaders = Record<string, PlainValue>

/** AMQP basic properties as amqplib names them (headers excluded). */
export type AmqpProperties = {
  contentType?: string
  contentEncoding?: string
  deliveryMode?: number
  priority?: number
  correlationId?: string
  replyTo?: string
  expiration?: string
  messageId?: string
  /** AMQP timestamp, seconds since the epoch (some apps write milliseconds). */
  timestamp?: number
  type?: string
  userId?: string
  appId?: string
  clusterId?: string
}

/** One delivery from a terminal DLQ, as the normaliser receives it. */
export type DeliveryView = {
  /** The DLQ this delivery was consumed from. */
  queue: string
  exchange: string
  routingKey: string
  redelivered: boolean
  properties: AmqpProperties
  headers: PlainHeaders
  body: Buffer
  /** The body already parsed as JSON by the caller (buildRow's classifyBody), so the normaliser does not parse it again. */
  bodyJson?: { value: unknown } | null
  entityKeyRule?: EntityKeyRule | null
  /** The source's entity-version rule (docs/ARCHITECTURE.md#entity-versions); absent or null: none. */
  entityVersionRule?: EntityVersionRule | null
}

export type FailureKind =
  | 'invalid'
  | 'transient'
  | 'exhausted'
  | 'expired'
  | 'overflow'
  | 'delivery-limit'
  | 'unknown'

export type Framework =
  | 'lazarus'
  | 'nservicebus'
  | 'masstransit'
  | 'spring-amqp'
  | 'spring-cloud-stream'
  | 'rebus'
  | 'wolverine'
  | 'easynetq'
  | 'symfony'
  | 'celery'
  | 'brighter'
  | 'plain-dlx'
  | 'unknown'

/** One x-death element, parsed; `raw` keeps nothing: the typed original is stored separately. */
export type XDeathEntry = {
  queue: string | null
  reason: string | null
  count: number | null
  exchange: string | null
  routingKeys: string[]
  time: Date | null
  originalExpiration: string | null
}

/** Everything the normaliser derives from a delivery. */
export type DerivedFailure = {
  framework: Framework
  errorType: string | null
  errorMessage: string | null
  errorStack: string | null
  failureKind: FailureKind
  service: string | null
  serviceVersion: string | null
  entityKey: string | null
  deathReason: string | null
  attempts: number | null
  origin: { exchange: string | null; routingKeys: string[]; queue: string | null }
  xDeath: XDeathEntry[]
  firstDeathAt: Date | null
  lastDeathAt: Date | null
  /** Best estimate of when the message failed; null when nothing says (the drainer then uses ingestion time). */
  failedAt: Date | null
  /** Error group key, e.g. "v1:0123456789abcdef" (docs/framework-headers.md#the-fingerprint). */
  signature: string
  /** Group title: "ShortType: normalised message" (120 chars max). */
  title: string
  /** The normalised message used in the title (and in the hash when there are no frames). */
  messagePattern: string | null
  /** The frames the signature hashed, throw site first: what tells groups with the same title apart. */
  topFrames?: string[]
  /** Problems noticed while reading the delivery, e.g. "x-death-malformed", "x-death-forged". */
  flags: string[]
  /**
   * Replay lineage stamped by Lazarus on replays (x-lazarus-origin-id, x-lazarus-replay-count, x-lazarus-replay-id).
   * replayId is absent unless the delivery carries one.
   */
  lineage: { originId: string | null; replayCount: number; replayId?: string }
  /** The entity version the source's rule found (epoch ms for a time); absent or null: none. */
  entityVersion?: number | null
}

/** One dead letter as the drainer stores it: a dead_letters row and what its group and status rows need. */
export type IngestRow = {
  fingerprint: Buffer
  redelivered: boolean
  body: Buffer
  bodyEncoding: 'json' | 'text' | 'binary'
  bodyPreview: string | null
  propertiesJson: string
  headersJson: string
  deliveryExchange: string
  deliveryRoutingKey: string
  deathReason: string | null
  attempts: number | null
  originExchange: string | null
  originRoutingKeys: string[]
  originQueue: string | null
  firstDeathAt: Date | null
  lastDeathAt: Date | null
  failedAt: Date
  errorType: string | null
  errorMessage: string | null
  errorStack: string | null
  failureKind: string
  service: string | null
  serviceVersion: string | null
  framework: string
  entityKey: string | null
  /** dead_letters.entity_version; absent or null: none. */
  entityVersion?: number | null
  signature: string
  title: string
  messagePattern: string | null
  /** The frames the group's signature hashed (error_groups.top_frames, written when the group is created). */
  topFrames?: string[]
  flags: string[]
  lineageOriginId: string | null
  replayCount: number
  /** x-lazarus-replay-id of the replay this copy died after (absent: none). */
  lineageReplayId?: string | null
  status: 'dead' | 'held'
  /** Held messages: the queue the guard took it from (x-lazarus-held-from), where a release sends it back. */
  heldFrom?: string | null
  /** The trace and span of its traceparent, b3 or uber-trace-id header (lib/server/traces/trace-context.ts); absent or null: none. */
  traceId?: string | null
  spanId?: string | null
}

/**
 * Characters of a text body kept as its preview: what search indexes (512, dead_letter_search_text_v2) and more
 * than the list shows (200). Not more: the whole body is stored beside it, and a longer preview only widens the row.
 */
export const PREVIEW_CHARS = 512
