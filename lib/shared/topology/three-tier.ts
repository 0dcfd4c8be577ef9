import { z } from 'zod'
import { text } from '../schemas/fields'
import { topicMatches } from './topic-match'
import type { DefinitionBinding, DefinitionExchange, DefinitionQueue, VhostDefinitions } from './definitions'

/**
 * The three-tier builder (docs/topology-builder.md): from a work queue's name, its routing keys and its retry delays,
 * the declarations of a retry topology that loses nothing and always ends, as RabbitMQ definitions, `rabbitmqadmin`
 * commands, a flat object list for the dry run, and the rule its consumer must follow. Pure: it runs in the browser.
 *
 * The design, for `orders` with delays 30 s, 5 min, 1 h:
 *
 *   producers ─▶ orders (topic) ──keys──▶ orders.work (quorum) ──nack──▶ orders.retry (topic, the work queue's DLX)
 *   orders.retry ──the producers' keys──────▶ orders.retry.30s ─TTL─▶ orders.return "orders.retry.30s" ─▶ orders.work
 *   orders.retry ──"orders.retry.30s"───────▶ orders.retry.5m  ─TTL─▶ orders.return "orders.retry.5m"  ─▶ orders.work
 *   orders.retry ──"orders.retry.5m"────────▶ orders.retry.1h  ─TTL─▶ orders.return "orders.retry.1h"  ─▶ orders.work
 *   orders.retry ──"orders.retry.1h"────────▶ orders.dlq        (a nack after the last tier)
 *   consumer, out of attempts ──publish──▶ orders.dead (fanout) ──▶ orders.dlq (quorum, bounded, reject-publish)
 *   orders.retry, orders.return ──alternate exchange──▶ orders.dead
 *
 * Why this shape:
 * - Escalation is done by the broker alone: the consumer always nacks (requeue=false) to retry. A nack cannot change
 *   a message's routing key, but dead-lettering out of a delay queue can (`x-dead-letter-routing-key`): tier i sends
 *   its messages home with its own name as the key, so the work queue's next dead-lettering carries that key, and the
 *   retry exchange routes it to tier i + 1. Republishing from the consumer would escalate too, but RabbitMQ 4.x no
 *   longer reads an `x-death` header a client publishes (docs/rabbitmq.md#x-death), so the counts a consumer
 *   decides by would restart at every hop. Here every hop is a dead-lettering, and `x-death` counts it on 3.10 and 4.x.
 * - One delay queue per tier with a queue-level TTL (`x-message-ttl`), never per-message TTLs: messages expire only
 *   at the head of a queue, so mixed TTLs in one queue would hold short delays behind long ones.
 * - The way home is its own direct exchange (`.return`), not the producers' exchange: other queues bound there must
 *   not receive every retry.
 * - Quorum queues throughout, which works on 3.10 (quorum queues gained message TTL and at-least-once dead-lettering
 *   in 3.10) and on 4.x (which removed classic mirroring). The work and delay queues dead-letter `at-least-once` with
 *   `overflow: reject-publish` (without it the broker silently falls back to at-most-once): a dead letter leaves its
 *   queue only once the next queue has confirmed it, so a broker restart mid-hop loses nothing.
 * - The terminal DLQ is bounded (`x-max-length`) and refuses at the bound (`reject-publish`) rather than drop its
 *   oldest letters (drop-head); dead letters refused there stay in the work queue, pending, until there is room.
 * - The loop's exit is explicit: `.dead` (fanout, bound to the DLQ) is where the consumer publishes a message it
 *   gives up on, with its failure details; and a nack after the last tier is routed to the DLQ too, so a consumer
 *   that ignores the rule still cannot loop.
 * - Every exchange that receives dead letters has `.dead` as its alternate exchange, so a dead letter with a key
 *   nothing binds is parked in the DLQ, not dropped.
 * - No `x-delivery-limit` on 3.x, which has no default and reads -1 as "drop at the first return". 4.x applies 20 to
 *   every quorum queue: on the work and delay queues that dead-letters into the ladder (they have a DLX), but the DLQ
 *   has no DLX, so a drainer that returns a letter 20 times (a database outage, a crash loop) would lose it; on 4.x
 *   the DLQ gets `x-delivery-limit: -1`, which there means "no limit" (docs/topology.md#findings,
 *   quorum-delivery-limit-no-dlx).
 */

/** Most retry tiers a topology may have. */
export const MAX_RETRY_TIERS = 6
/** The terminal DLQ's default length limit. */
export const DEFAULT_DLQ_MAX_LENGTH = 1_000_000
/** Longest retry delay: a week. */
export const MAX_RETRY_DELAY_MS = 7 * 24 * 3_600_000

/** Longest base name, in UTF-8 bytes: RabbitMQ names are at most 255 bytes, and the builder appends suffixes. */
const MAX_BASE_NAME_BYTES = 200

const utf8Bytes = (value: string) => new TextEncoder().encode(value).length

const baseName = text()
  .trim()
  .min(1, 'name the work queue')
  .refine((value) => utf8Bytes(value) <= MAX_BASE_NAME_BYTES, `must be at most ${MAX_BASE_NAME_BYTES} bytes`)
  .refine((value) => !/[*#]/.test(value), 'must not contain * or #: the retry keys are made from it and would be wildcards')
  .refine((value) => !value.startsWith('amq.'), 'names starting with amq. are reserved by RabbitMQ')

const routingKey = text().refine((value) => utf8Bytes(value) <= 255, 'a routing key is at most 255 bytes')

export const threeTierSpecSchema = z
  .object({
    /** Base of every name: `orders` gives the exchange `orders`, the queue `orders.work`, …, `orders.dlq`. */
    name: baseName,
    /** The keys (topic patterns allowed) binding the work queue to the producers' exchange. */
    routingKeys: z
      .array(routingKey)
      .min(1, 'at least one routing key')
      .max(50)
      .refine((keys) => new Set(keys).size === keys.length, 'routing keys must be different'),
    /** The retry delays in milliseconds, one delay queue each, shortest first. */
    retryDelaysMs: z
      .array(z.number().int().min(1).max(MAX_RETRY_DELAY_MS))
      .min(1, 'at least one retry tier')
      .max(MAX_RETRY_TIERS, `at most ${MAX_RETRY_TIERS} retry tiers`)
      .refine((delays) => delays.every((d, i) => i === 0 || d > delays[i - 1]!), 'retry delays must be strictly increasing'),
    /** The terminal DLQ's `x-max-length`. */
    dlqMaxLength: z.number().int().min(1).max(1_000_000_000).default(DEFAULT_DLQ_MAX_LENGTH),
    /** The terminal DLQ's `x-max-length-bytes`, if any. */
    dlqMaxLengthBytes: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    const names = topologyNames(spec.name, spec.retryDelaysMs)
    for (const [i, key] of spec.routingKeys.entries()) {
      const clash = names.delayQueues.find((returnKey) => topicMatches(key, returnKey))
      if (clash) {
        ctx.addIssue({
          code: 'custom',
          path: ['routingKeys', i],
          message: `"${key}" also matches the retry key "${clash}": a retried message would enter two tiers at once; use narrower keys`,
        })
      }
    }
  })

export type ThreeTierSpecInput = z.input<typeof threeTierSpecSchema>
export type ThreeTierSpec = z.output<typeof threeTierSpecSchema>

export type ObjectArguments = Record<string, string | number>

export type BuilderExchangeRole = 'work-exchange' | 'retry-exchange' | 'return-exchange' | 'parking-exchange'
export type BuilderQueueRole = 'work' | 'delay' | 'dlq'

/** One object of the topology, for the dry run: what it is, and why it is there. */
export type BuilderObject =
  | {
      kind: 'exchange'
      id: string
      name: string
      role: BuilderExchangeRole
      exchangeType: 'topic' | 'direct' | 'fanout'
      durable: true
      autoDelete: false
      internal: false
      arguments: ObjectArguments
      purpose: string
    }
  | {
      kind: 'queue'
      id: string
      name: string
      role: BuilderQueueRole
      queueType: 'quorum'
      durable: true
      autoDelete: false
      exclusive: false
      arguments: ObjectArguments
      purpose: string
    }
  | {
      kind: 'binding'
      id: string
      source: string
      destination: string
      destinationType: 'queue' | 'exchange'
      routingKey: string
      arguments: ObjectArguments
      purpose: string
    }

export type BuilderExchange = Extract<BuilderObject, { kind: 'exchange' }>
export type BuilderQueue = Extract<BuilderObject, { kind: 'queue' }>
export type BuilderBinding = Extract<BuilderObject, { kind: 'binding' }>

export type ConsumerRule = {
  workQueue: string
  parkingExchange: string
  /** The last delay queue: an `x-death` entry `{ queue: this, reason: 'expired' }` means every tier has been tried. */
  lastDelayQueue: string
  /** Deliveries of one message at most: the first one and one after each tier. */
  maxDeliveries: number
  /** What the consumer must do, in prose. */
  text: string
  pseudoCode: string
}

export type ThreeTierNames = {
  exchange: string
  workQueue: string
  retryExchange: string
  delayQueues: string[]
  returnExchange: string
  parkingExchange: string
  dlq: string
}

export type ThreeTierBuild = {
  spec: ThreeTierSpec
  names: ThreeTierNames
  definitions: VhostDefinitions
  commands: string[]
  consumerRule: ConsumerRule
  objects: BuilderObject[]
}

/** `200ms`, `30s`, `5m`, `1h`: delay queues are named after their TTL, so a name never lies about it. */
export function formatDelay(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`
  if (ms % 60_000 === 0) return `${ms / 60_000}m`
  if (ms % 1_000 === 0) return `${ms / 1_000}s`
  return `${ms}ms`
}

export function topologyNames(base: string, retryDelaysMs: readonly number[]): ThreeTierNames {
  return {
    exchange: base,
    workQueue: `${base}.work`,
    retryExchange: `${base}.retry`,
    delayQueues: retryDelaysMs.map((ms) => `${base}.retry.${formatDelay(ms)}`),
    returnExchange: `${base}.return`,
    parkingExchange: `${base}.dead`,
    dlq: `${base}.dlq`,
  }
}

const QUORUM = { 'x-queue-type': 'quorum' } as const
/** At-least-once dead-lettering needs reject-publish, or the broker silently runs at-most-once (docs/rabbitmq.md). */
const AT_LEAST_ONCE = { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' } as const

function exchange(name: string, role: BuilderExchangeRole, exchangeType: BuilderExchange['exchangeType'], args: ObjectArguments, purpose: string): BuilderExchange {
  return { kind: 'exchange', id: `exchange:${name}`, name, role, exchangeType, durable: true, autoDelete: false, internal: false, arguments: args, purpose }
}

function queue(name: string, role: BuilderQueueRole, args: ObjectArguments, purpose: string): BuilderQueue {
  return { kind: 'queue', id: `queue:${name}`, name, role, queueType: 'quorum', durable: true, autoDelete: false, exclusive: false, arguments: { ...QUORUM, ...args }, purpose }
}

function binding(source: string, destination: string, routingKey: string, purpose: string): BuilderBinding {
  return {
    kind: 'binding',
    id: `binding:${JSON.stringify([source, 'queue', destination, routingKey])}`,
    source,
    destination,
    destinationType: 'queue',
    routingKey,
    arguments: {},
    purpose,
  }
}

/** Every object, in an order that declares each before anything refers to it. */
function buildObjects(spec: ThreeTierSpec, n: ThreeTierNames, brokerMajor: number): BuilderObject[] {
  const delays = spec.retryDelaysMs
  const last = n.delayQueues[n.delayQueues.length - 1]!
  const ae = { 'alternate-exchange': n.parkingExchange }
  const dlqLimits: ObjectArguments = { 'x-max-length': spec.dlqMaxLength, 'x-overflow': 'reject-publish' }
  if (spec.dlqMaxLengthBytes !== undefined) dlqLimits['x-max-length-bytes'] = spec.dlqMaxLengthBytes
  if (brokerMajor >= 4) dlqLimits['x-delivery-limit'] = -1
  return [
    exchange(n.parkingExchange, 'parking-exchange', 'fanout', {}, 'The loop\'s exit: the consumer publishes here a message it gives up on; every key reaches the DLQ.'),
    queue(n.dlq, 'dlq', dlqLimits, 'The terminal DLQ: bounded, and at the bound it refuses new dead letters instead of dropping its oldest.'),
    binding(n.parkingExchange, n.dlq, '', 'Everything parked reaches the DLQ.'),
    exchange(n.returnExchange, 'return-exchange', 'direct', ae, 'Takes expired retries home to the work queue; its alternate exchange parks a key nothing binds.'),
    exchange(n.retryExchange, 'retry-exchange', 'topic', ae, "The work queue's dead-letter exchange: routes each rejected message to its next tier; its alternate exchange parks a key nothing binds."),
    exchange(n.exchange, 'work-exchange', 'topic', {}, 'Where producers publish.'),
    ...n.delayQueues.map((name, i) =>
      queue(
        name,
        'delay',
        { 'x-message-ttl': delays[i]!, 'x-dead-letter-exchange': n.returnExchange, 'x-dead-letter-routing-key': name, ...AT_LEAST_ONCE },
        `Retry tier ${i + 1}: holds each message ${formatDelay(delays[i]!)} (queue-level TTL), then sends it home with the key "${name}".`,
      ),
    ),
    queue(
      n.workQueue,
      'work',
      { 'x-dead-letter-exchange': n.retryExchange, ...AT_LEAST_ONCE },
      'The work queue: a message its consumer rejects (nack, requeue=false) is dead-lettered to the retry exchange, at least once.',
    ),
    ...spec.routingKeys.map((key) => binding(n.exchange, n.workQueue, key, `Producers' messages with key "${key}" reach the work queue.`)),
    ...n.delayQueues.map((name) => binding(n.returnExchange, n.workQueue, name, `Messages back from ${name} reach the work queue.`)),
    ...spec.routingKeys.map((key) => binding(n.retryExchange, n.delayQueues[0]!, key, `A first rejection (key "${key}") goes to tier 1.`)),
    ...n.delayQueues.slice(1).map((name, i) => binding(n.retryExchange, name, n.delayQueues[i]!, `A rejection after ${n.delayQueues[i]} goes to tier ${i + 2}.`)),
    binding(n.retryExchange, n.dlq, last, `A rejection after the last tier (${last}) ends in the DLQ: the loop cannot go round again.`),
  ]
}

function toDefinitions(objects: readonly BuilderObject[]): VhostDefinitions {
  const queues: DefinitionQueue[] = []
  const exchanges: DefinitionExchange[] = []
  const bindings: DefinitionBinding[] = []
  for (const o of objects) {
    if (o.kind === 'queue') queues.push({ name: o.name, durable: o.durable, auto_delete: o.autoDelete, arguments: o.arguments })
    if (o.kind === 'exchange') {
      exchanges.push({ name: o.name, type: o.exchangeType, durable: o.durable, auto_delete: o.autoDelete, internal: o.internal, arguments: o.arguments })
    }
    if (o.kind === 'binding') {
      bindings.push({ source: o.source, destination: o.destination, destination_type: o.destinationType, routing_key: o.routingKey, arguments: o.arguments })
    }
  }
  return { parameters: [], policies: [], queues, exchanges, bindings }
}

/** One shell word: bare when it is plain, single-quoted otherwise (a single quote inside becomes '\''). */
export function shellQuote(value: string): string {
  if (/^[A-Za-z0-9_.,:/@%+-]+$/.test(value)) return value
  return `'${value.replace(/'/g, `'\\''`)}'`
}

const field = (key: string, value: string) => `${key}=${shellQuote(value)}`

function toCommand(vhost: string, o: BuilderObject): string {
  const prefix = `rabbitmqadmin --vhost=${shellQuote(vhost)} declare`
  const args = Object.keys(o.arguments).length ? [field('arguments', JSON.stringify(o.arguments))] : []
  switch (o.kind) {
    case 'exchange':
      return [prefix, 'exchange', field('name', o.name), field('type', o.exchangeType), 'durable=true', 'auto_delete=false', 'internal=false', ...args].join(' ')
    case 'queue':
      return [prefix, 'queue', field('name', o.name), 'durable=true', 'auto_delete=false', ...args].join(' ')
    case 'binding':
      return [
        prefix,
        'binding',
        field('source', o.source),
        field('destination', o.destination),
        field('destination_type', o.destinationType),
        ...(o.routingKey === '' ? [] : [field('routing_key', o.routingKey)]),
        ...args,
      ].join(' ')
  }
}

function consumerRule(spec: ThreeTierSpec, n: ThreeTierNames): ConsumerRule {
  const last = n.delayQueues[n.delayQueues.length - 1]!
  const tiers = n.delayQueues.length
  const text = [
    `The consumer of "${n.workQueue}" acks a message it handled. When handling fails:`,
    `- while the message has not been through every tier (no x-death entry for queue "${last}" with reason "expired"), it nacks with requeue=false. ` +
      `The broker dead-letters the message to "${n.retryExchange}", which routes it to the next tier (${spec.retryDelaysMs.map(formatDelay).join(', ')}); ` +
      'after the delay it comes back to the work queue. Never requeue=true: the message would return to the head of the queue at once and block those behind it.',
    `- once it has (that x-death entry has count >= 1), or when the failure cannot heal (a message that does not parse), it publishes a copy to "${n.parkingExchange}" ` +
      '(same body and properties, plus headers that say why it failed) on a channel in confirm mode, and acks the original once the copy is confirmed. ' +
      `The copy lands in "${n.dlq}". A nack at that point also ends in "${n.dlq}", without the failure details.`,
    `A message is delivered at most ${tiers + 1} times. On a retried delivery the routing key is the tier's name (for example "${n.delayQueues[0]}"); ` +
      `the key the producer used is in the x-death entry for "${n.workQueue}" (its routing-keys). ` +
      'If the DLQ is full it refuses the copy: nack it (requeue=false) or retry the publish later, never ack a copy the broker refused.',
  ].join('\n')
  const pseudoCode = [
    `on delivery m from ${JSON.stringify(n.workQueue)}:`,
    '  try:',
    '    handle(m)',
    '    ack(m)',
    '  except error:',
    `    passedLastTier = any(d.queue == ${JSON.stringify(last)} and d.reason == "expired" and d.count >= 1 for d in m.headers["x-death"])`,
    '    if passedLastTier or not retryable(error):',
    `      publish(exchange=${JSON.stringify(n.parkingExchange)}, routingKey=m.routingKey, body=m.body,`,
    '              properties=m.properties + { headers: m.headers + failureHeaders(error) })',
    '      waitForConfirm()   # refused (DLQ full): nack(m, requeue=false) instead of ack',
    '      ack(m)',
    '    else:',
    `      nack(m, requeue=false)   # the broker moves it to the next tier (${n.retryExchange})`,
  ].join('\n')
  return { workQueue: n.workQueue, parkingExchange: n.parkingExchange, lastDelayQueue: last, maxDeliveries: tiers + 1, text, pseudoCode }
}

export type BuildThreeTierOptions = {
  /** The vhost the `rabbitmqadmin` commands name. Default `/`. */
  vhost?: string
  /** The broker's `rabbitmq_version` (e.g. `4.1.2`): on 4.x the DLQ's delivery limit is switched off. Default: 3.x. */
  brokerVersion?: string
}

/** The topology for a spec (parsed with threeTierSpecSchema: this validates it again and throws a ZodError). */
export function buildThreeTier(input: ThreeTierSpecInput, { vhost = '/', brokerVersion = '3' }: BuildThreeTierOptions = {}): ThreeTierBuild {
  const spec = threeTierSpecSchema.parse(input)
  const names = topologyNames(spec.name, spec.retryDelaysMs)
  const objects = buildObjects(spec, names, Number.parseInt(brokerVersion, 10) || 3)
  return {
    spec,
    names,
    definitions: toDefinitions(objects),
    commands: objects.map((o) => toCommand(vhost, o)),
    consumerRule: consumerRule(spec, names),
    objects,
  }
}
