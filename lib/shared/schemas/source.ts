import { z } from 'zod'
// The guard owns the rule's definition: it runs inside applications and imports nothing of Lazarus, so Lazarus
// imports from it. tests/unit/entity-key-rule.test.ts checks that the schema accepts exactly that type.
import { ENTITY_KEY_PROPERTIES, ENTITY_VERSION_TYPES, type EntityKeyRule, type EntityVersionRule } from '@/packages/guard/src/protocol'
import { text } from './fields'

export { ENTITY_KEY_PROPERTIES, ENTITY_VERSION_TYPES, type EntityKeyRule, type EntityVersionRule }

const ruleVariants = {
  property: z.object({ kind: z.literal('property'), name: z.enum(ENTITY_KEY_PROPERTIES) }),
  header: z.object({ kind: z.literal('header'), name: text().min(1).max(255) }),
  jsonPointer: z.object({ kind: z.literal('jsonPointer'), pointer: text().regex(/^(\/([^~/]|~[01])*)+$/, 'must be an RFC 6901 JSON pointer such as /order/id') }),
}

export const entityKeyRuleSchema = z.discriminatedUnion('kind', [ruleVariants.property, ruleVariants.header, ruleVariants.jsonPointer])

/** Where the entity version lives, and how it reads (docs/ARCHITECTURE.md#entity-versions). */
const versionType = { type: z.enum(ENTITY_VERSION_TYPES) }
export const entityVersionRuleSchema = z.discriminatedUnion('kind', [
  ruleVariants.property.extend(versionType).strict(),
  ruleVariants.header.extend(versionType).strict(),
  ruleVariants.jsonPointer.extend(versionType).strict(),
])

export const replayTargetSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('source') }),
  z.object({ type: z.literal('queue') }),
  z.object({ type: z.literal('custom'), exchange: text().max(255), routingKey: text().max(255) }),
])

const queueName = text().trim().min(1, 'queue is required').max(255).refine((q) => !q.startsWith('amq.'), 'queues starting with "amq." are reserved by RabbitMQ')

const rabbitSourceSchema = z.object({
  /** Optional: a RabbitMQ queue is the default kind of source. */
  kind: z.literal('dlq').optional(),
  vhost: text().min(1).max(255).default('/'),
  queue: queueName,
  entityKey: entityKeyRuleSchema.nullable().optional(),
  entityVersion: entityVersionRuleSchema.nullable().optional(),
  orderSensitive: z.boolean().optional(),
  /** Replays of its messages need a second operator's approval when the admin's policy says so (docs/security.md#four-eyes). */
  critical: z.boolean().optional(),
  defaultTarget: replayTargetSchema.optional(),
  enabled: z.boolean().optional(),
  /**
   * The admin's explicit word that the queue is a dead-letter queue although the management API shows signs of a work
   * queue (other consumers, past consumption, a TTL into a dead-letter exchange), or cannot be asked. Not stored: it
   * applies to this request (creating the source, or enabling it with PATCH).
   */
  confirmNotWorkQueue: z.boolean().optional(),
}).strict()

/** A JetStream stream or consumer name: no whitespace, dots, wildcards or path separators (nats-server's own rule). */
const jetStreamName = (what: string) =>
  text().trim().min(1, `${what} is required`).max(255).regex(/^[^\s.*>/\\]+$/, `a ${what} name has no spaces, dots, "*", ">" or slashes`)

/**
 * Delete each captured message from its stream once it is stored (docs/jetstream.md#removing-captured-messages).
 * JetStream sources only; off unless an admin turns it on: the message is the team's, and other consumers and tools
 * may still read it.
 */
const removeAfterCapture = z.boolean().optional()

/**
 * A JetStream stream's failures (docs/jetstream.md): those of one consumer, or of all of them when `consumer` is
 * absent. Replays publish to the subject each message was read from (docs/jetstream.md#replay); pauses do not apply yet.
 */
const jetStreamSourceSchema = z.object({
  kind: z.literal('jetstream'),
  stream: jetStreamName('stream'),
  consumer: jetStreamName('consumer').optional(),
  entityKey: entityKeyRuleSchema.nullable().optional(),
  entityVersion: entityVersionRuleSchema.nullable().optional(),
  critical: z.boolean().optional(),
  enabled: z.boolean().optional(),
  removeAfterCapture,
}).strict()

// By `kind`, so a refusal names the field of the kind asked for (a union would answer "Invalid input").
export const createSourceSchema = z.discriminatedUnion('kind', [jetStreamSourceSchema, rabbitSourceSchema])

/** A JetStream source's name, as lists, filters and source-pattern scopes show it: `stream/consumer` or `stream/*`. */
export function jetStreamSourceName(stream: string, consumer: string | null | undefined): string {
  return `${stream}/${consumer ?? '*'}`
}

export const updateSourceSchema = rabbitSourceSchema.omit({ kind: true, vhost: true, queue: true }).extend({ removeAfterCapture }).partial().strict()

export type CreateSourceInput = z.infer<typeof createSourceSchema>
export type UpdateSourceInput = z.infer<typeof updateSourceSchema>

/** A source as the API returns it (docs/ARCHITECTURE.md#the-api-contract). */
export type SourceDto = {
  id: string
  /**
   * 'dlq': a terminal DLQ; 'hold': the queue pause guards park messages in (drained as status "held"); 'jetstream': a
   * JetStream stream's failure advisories (its `vhost` is empty and `queue` is `stream/consumer` or `stream/*`).
   */
  kind: 'dlq' | 'hold' | 'jetstream'
  vhost: string
  queue: string
  /** JetStream sources: the stream, and the consumer (null: all of the stream's consumers). Null for RabbitMQ. */
  stream: string | null
  consumer: string | null
  /** JetStream sources: each captured message is deleted from its stream once stored. False for RabbitMQ. */
  removeAfterCapture: boolean
  entityKey: EntityKeyRule | null
  /** Where the entity version lives; null: none (no version checks for this source). */
  entityVersion: EntityVersionRule | null
  orderSensitive: boolean
  critical: boolean
  defaultTarget: z.infer<typeof replayTargetSchema>
  enabled: boolean
  drained: number
  depth: number | null
  consumers: number | null
  lastDrainAt: string | null
  error: string | null
  errorAt: string | null
  createdAt: string
}

/** GET /api/sources: `brokerError` says why depths are missing when the management API did not answer. */
export type SourceListDto = { sources: SourceDto[]; brokerError: string | null }

/**
 * Where a JetStream source's failure advisories are kept and read (docs/jetstream.md#capture): Lazarus' own stream on
 * every stream's advisories (`own-wide`), Lazarus' own stream narrowed to the streams no team's stream keeps
 * (`own-narrow`), or a team's own stream read with Lazarus' durable consumer (`team`); `none` says why not.
 */
export type JetStreamCaptureRouteDto =
  | { mode: 'own-wide' | 'own-narrow' | 'team'; advisoryStream: string }
  | { mode: 'none'; problem: string }

/** A JetStream source's facts as the NATS server tells them now, for its row on the sources page. */
export type JetStreamSourceFactsDto = {
  sourceId: string
  stream: string
  /** The source stream's retention, which decides what a terminated (+TERM) message leaves to capture; null: no such stream. */
  retention: 'limits' | 'workqueue' | 'interest' | null
  capture: JetStreamCaptureRouteDto
  /**
   * The capture consumer's advisories on that stream: not yet delivered (`waiting`) and delivered but not yet
   * acknowledged (`unacked`). All of the stream's, for every source read from it. Null: the consumer does not exist yet.
   */
  pending: { waiting: number; unacked: number } | null
  /** What the server would not say about this source (its stream is gone, a request timed out); null: nothing. */
  problem: string | null
}

/** GET /api/sources/jetstream: `natsError` says why there are no facts (NATS unset or unreachable). */
export type JetStreamFactsDto = { consumer: string; sources: JetStreamSourceFactsDto[]; natsError: string | null }
