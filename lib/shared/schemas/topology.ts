import { z } from 'zod'
import { idSchema, text } from './fields'

/**
 * The topology doctor's contract (docs/topology.md): the broker's graph of one vhost with each queue's effective
 * settings, and the findings of the traps that lose or delay messages before they reach a dead-letter queue.
 */

export const FINDING_SEVERITIES = ['error', 'warning', 'info'] as const
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number]

/**
 * Every kind of RabbitMQ finding. The numbers are the issue's list (docs/topology.md#findings):
 * 1 dead letters the broker cannot route; 2 retry loops; 3 head-of-line TTL blocking; 4 requeue to head;
 * 5 unbounded DLQs; 6 broker semantics; 7 evidence from queues the doctor cannot see.
 */
export const RABBITMQ_FINDING_KINDS = [
  'dlx-missing', // 1: the dead-letter exchange does not exist
  'dlx-unroutable', // 1: no binding of the DLX matches the dead-letter routing key
  'dlx-routing-unknown', // 1: a headers exchange, or keys only the messages know: checked from stored letters if any
  'retry-loop-no-exit', // 2: work → DLX → delay → work with no way to a terminal DLQ
  'retry-count-high', // 2: stored letters whose x-death counts grew past the threshold
  'delay-mixed-ttl', // 3: a delay queue whose letters carried different per-message TTLs
  'delay-no-queue-ttl', // 3: a delay queue (DLX, no consumer) with no queue-level TTL
  'requeue-to-head', // 4: redeliveries high, acks near zero
  'dlq-unbounded', // 5: a terminal DLQ with no length limit, growing, classic, or drained by nobody
  'no-dlx', // 6: a consumed queue whose rejects the broker drops (no DLX)
  'quorum-delivery-limit-no-dlx', // 6: a quorum queue that drops messages at its delivery limit
  'quorum-at-most-once', // 6: a quorum queue with a DLX whose dead letters go at-most-once
  'at-least-once-fallback', // 6: at-least-once without reject-publish silently runs at-most-once
  'expires-with-dlx', // 6: a queue that expires as a whole dead-letters nothing
  'drop-head-no-dlx', // 6: drop-head overflow with no DLX drops the oldest messages
  'dlq-ttl-no-dlx', // 6: a DLQ with a message TTL and no DLX of its own
  'dead-letter-cycle-no-reject', // 6: a dead-letter cycle of expiries only, which the broker drops
  'message-near-size-limit', // 6: stored letters near max_message_size that a replay cannot republish
  'unknown-x-death-queue', // 7: x-death names queues the doctor cannot see
] as const

/** JetStream's versions of the traps, read from the NATS server's own answers (docs/jetstream.md#the-doctors-jetstream-findings). */
export const JETSTREAM_FINDING_KINDS = [
  'no-max-deliver', // a consumer without max_deliver redelivers a poison message forever
  'advisories-not-captured', // max_deliver set, but no stream keeps the consumer's failure advisories
  'stream-limits-drop-failures', // a stream's limits remove failed messages (or advisories) before anyone reads them
  'ack-wait-too-short', // sampled acks take about as long as ack_wait, or longer: redeliveries with no failure
  'no-backoff', // max_deliver > 1 and no backoff: retries come too fast to outlast a transient failure
  'terminated-message-gone', // a work-queue or interest stream removed terminated messages before Lazarus read them
] as const

export const FINDING_KINDS = [...RABBITMQ_FINDING_KINDS, ...JETSTREAM_FINDING_KINDS] as const
export type FindingKind = (typeof FINDING_KINDS)[number]

/** Where an effective value came from, in the broker's order of precedence (docs/topology.md#effective-settings). */
export type SettingOrigin = 'argument' | 'policy' | 'operator-policy' | 'default'

export type EffectiveSettingDto = {
  /** The policy key (`dead-letter-exchange`, `message-ttl`, `max-length`, `overflow`, …), not the `x-` argument. */
  key: string
  value: string | number | boolean | null
  from: SettingOrigin
  /** The policy or operator policy's name when `from` is one of those. */
  policy?: string
  /** Values that lost to `value`, with where each came from (the lower number wins for limits). */
  overridden?: { value: string | number | boolean | null; from: SettingOrigin; policy?: string }[]
}

export type QueueStatsDto = {
  messages: number
  consumers: number
  /** Messages per second over the management API's last sample window; null when the broker has none. */
  publishRate: number | null
  deliverRate: number | null
  redeliverRate: number | null
  ackRate: number | null
}

/** The role the doctor inferred for a queue from its settings and edges; drives which rules apply. */
export const QUEUE_ROLES = ['work', 'delay', 'dlq', 'other'] as const
export type QueueRole = (typeof QUEUE_ROLES)[number]

/** A consumer is named `stream/consumer`: consumer names are unique within their stream only. */
export type TopologyObjectRef = { type: 'queue' | 'exchange' | 'policy' | 'stream' | 'consumer'; name: string }

/** A JetStream stream's or consumer's setting as the server answered it, in words (`1h`, `unlimited`, `explicit`). */
export type JetStreamSettingDto = { key: string; value: string }

/** What a consumer's sampled acks took (docs/jetstream.md#the-doctors-jetstream-findings), over the sampler's window. */
export type AckTimesDto = {
  samples: number
  p95Ms: number
  maxMs: number
  /** The 95th percentile of each ack's time as a share of its deadline (ack_wait, or the backoff's step). */
  p95Share: number
  /** Acks of a redelivery: an earlier delivery of the message timed out or was nak'd. */
  onRedelivery: number
  since: string
}

export type TopologyNodeDto =
  | {
      /** `q:<name>`; names are unique per type within a vhost. */
      id: string
      type: 'queue'
      name: string
      queueType: 'classic' | 'quorum' | 'stream'
      role: QueueRole
      settings: EffectiveSettingDto[]
      stats: QueueStatsDto
      /** The Lazarus source draining this queue, if any. */
      sourceId: string | null
      /** The worst severity among the open findings naming this node, or null. */
      severity: FindingSeverity | null
    }
  | {
      /** `x:<name>`; the default exchange is `x:` (empty name). */
      id: string
      type: 'exchange'
      name: string
      exchangeType: string
      /** The alternate exchange (argument or policy), if any. */
      alternateExchange: string | null
      internal: boolean
      severity: FindingSeverity | null
    }
  | {
      /** `s:<name>`: a JetStream stream. */
      id: string
      type: 'stream'
      name: string
      retention: 'limits' | 'interest' | 'workqueue'
      subjects: string[]
      settings: JetStreamSettingDto[]
      stats: { messages: number; bytes: number; consumers: number; firstMessageAt: string | null }
      /** It keeps consumers' failure advisories ($JS.EVENT.ADVISORY.CONSUMER.…). */
      keepsAdvisories: boolean
      /** Lazarus created it to keep advisories (docs/jetstream.md#capture). */
      lazarus: boolean
      /** The Lazarus source capturing every consumer of the stream (`stream/*`), if any. */
      sourceId: string | null
      severity: FindingSeverity | null
    }
  | {
      /** `c:<stream>/<consumer>`: a JetStream consumer; `name` is `stream/consumer`. */
      id: string
      type: 'consumer'
      name: string
      stream: string
      consumer: string
      settings: JetStreamSettingDto[]
      stats: { pending: number; ackPending: number; redelivered: number; waiting: number }
      /** Its sampled ack times, when it samples them (sample_freq) and the sampler saw some; else null. */
      ackTimes: AckTimesDto | null
      /** Lazarus' own capture consumer: drawn, judged by no rule. */
      lazarus: boolean
      /** The Lazarus source capturing its failures (its own, or the stream's catch-all), if any. */
      sourceId: string | null
      severity: FindingSeverity | null
    }

export type TopologyEdgeDto = {
  id: string
  from: string
  to: string
  /**
   * binding: exchange → queue or exchange; dead-letter: queue → its DLX; alternate: exchange → its alternate exchange;
   * consumes: stream → its consumer; advisories: consumer → the stream that keeps its failure advisories.
   */
  kind: 'binding' | 'dead-letter' | 'alternate' | 'consumes' | 'advisories'
  /**
   * A binding's key, or the dead-letter routing key (null: the message's own keys); a consumer's filter subject; which
   * failure advisories the stream keeps (`max-deliveries`, `terminated`, or both).
   */
  routingKey: string | null
  /** Dead-letter edges: the queue's x-dead-letter-strategy etc. are in the queue's settings. */
}

export type FindingDto = {
  id: string
  kind: FindingKind
  severity: FindingSeverity
  vhost: string
  /** One line naming the objects: `DLX "orders.retry" has no binding for "orders.created"`. */
  title: string
  /** Why it loses or delays messages. */
  why: string
  /** What to change, concretely (the argument or policy key and value). */
  fix: string
  /** The facts that raised it: settings with their origin, rates, counts, TTL values. */
  evidence: { label: string; value: string }[]
  /** The broker objects it concerns; the UI links and highlights them. */
  objects: TopologyObjectRef[]
  /** Node ids of a cycle, in order, for retry-loop and dead-letter-cycle findings. */
  cycle: string[] | null
  /** Stored messages that are evidence: a /messages query string (without `?`), or null. */
  messagesQuery: string | null
  firstSeenAt: string
  lastSeenAt: string
  /** Set when the last run no longer raised it. */
  resolvedAt: string | null
  acknowledged: { by: string; at: string; reason: string } | null
}

/** What a run checked, so a clean bill can be trusted: one line per rule, with how many objects it looked at. */
export type TopologyCheckDto = { kind: FindingKind; checked: number; description: string; raised: number }

export type TopologyDto = {
  vhost: string
  /** The vhosts the doctor watches (LAZARUS_TOPOLOGY_VHOSTS; the broker URL's vhost by default). */
  vhosts: string[]
  brokerVersion: string | null
  /** When the broker was read; null when no run has finished for this vhost yet. */
  checkedAt: string | null
  /** The last run's failure (management API down, …), if it failed. */
  error: string | null
  nodes: TopologyNodeDto[]
  edges: TopologyEdgeDto[]
  findings: FindingDto[]
  checks: TopologyCheckDto[]
  /**
   * The JetStream part beside the vhost's (docs/jetstream.md#the-doctors-jetstream-findings): its streams and consumers
   * are in `nodes`, its findings and checks with the vhost's. `configured: false`: LAZARUS_NATS_URL is unset.
   */
  jetstream: JetStreamTopologyStatusDto
}

export type JetStreamTopologyStatusDto = {
  configured: boolean
  /** When the NATS server was last read; null when no run has finished. */
  checkedAt: string | null
  serverVersion: string | null
  /** The last run's failure (server unreachable, …), if it failed: the graph and findings are the run's before. */
  error: string | null
}

export const topologyQuerySchema = z
  .object({
    vhost: text().max(255).optional(),
    /** A source's id: the graph around its queue (what dead-letters into it, and where it goes). */
    source: idSchema.optional(),
  })
  .strict()

export const findingsQuerySchema = z
  .object({
    vhost: text().max(255).optional(),
    /** jetstream: the JetStream findings (vhost is then ignored). */
    broker: z.enum(['jetstream']).optional(),
    /** open (default): not resolved; all: with resolved ones. */
    state: z.enum(['open', 'all']).default('open'),
  })
  .strict()

export const acknowledgeFindingSchema = z.object({ reason: text().trim().min(3, 'say why').max(500) }).strict()

// POST /api/topology/runs: run the doctor now on one vhost (default: the broker URL's)
export const runTopologySchema = z.object({ vhost: text().max(255).optional() }).strict()
