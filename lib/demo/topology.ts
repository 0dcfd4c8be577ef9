import type { Channel, ChannelModel, Replies } from 'amqplib'
import { declareObjects } from '../shared/topology/declare-objects'
import { buildThreeTier, formatDelay, type ThreeTierBuild } from '../shared/topology/three-tier'

export { formatDelay }

/**
 * The demo's per-app RabbitMQ topology: the three-tier builder's (lib/shared/topology/three-tier.ts,
 * docs/topology-builder.md) with two retry tiers, plus a few side queues that dead-letter on their own (TTL, overflow,
 * a consumer without retries) into the builder's parking exchange.
 *
 *   <base> (topic) ──keys──▶ <base>.work ──nack──▶ <base>.retry ──▶ <base>.retry.<short> ─TTL─▶ <base>.return ─▶ work
 *                                                               └──▶ <base>.retry.<long>  (the second rejection)
 *   <base>.work consumer gives up ──copy with failure headers──▶ <base>.dead (fanout) ──▶ <base>.dlq
 *   <base>.<side queue> ──expired / maxlen / rejected (DLX <base>.dead)────────────────────────┘
 *
 * where <base> is `<prefix>.<app>`. Every declaration is idempotent, so re-running only adds messages.
 */

export type RetryTier = 'short' | 'long'

export type RetryDelays = Record<RetryTier, number>

/** Delay-queue TTLs, in milliseconds, for a run a person watches. */
export const DEMO_DELAYS: RetryDelays = { short: 5_000, long: 30_000 }

/** Delay-queue TTLs, in milliseconds, for tests (`--fast`). */
export const FAST_DELAYS: RetryDelays = { short: 200, long: 500 }

/**
 * TTL of side queues whose messages are meant to expire. The same in every profile: a different value would make
 * re-declaring the queue fail with PRECONDITION_FAILED.
 */
export const EXPIRING_QUEUE_TTL_MS = 1_000

/** Length limit of capped side queues; what does not fit is dead-lettered with reason `maxlen`. */
export const CAPPED_QUEUE_MAX_LENGTH = 25

/** Terminal DLQ length limit: a safety net against a runaway demo, far above anything it publishes. */
export const DLQ_MAX_LENGTH = 100_000

export type SideQueueKind = 'expiring' | 'capped' | 'no-retry'

export type SideQueueSpec = {
  /** Queue name below the app's base name, e.g. `reservation-holds`. */
  name: string
  kind: SideQueueKind
  /** Routing key, on the app exchange, that reaches this queue and nothing else. */
  routingKey: string
}

export type AppTopologySpec = {
  app: string
  /** Routing keys the work queue consumes; every failure goes through the short tier, then the long one. */
  routingKeys: readonly string[]
  sideQueues: readonly SideQueueSpec[]
}

export type AppTopology = {
  app: string
  exchange: string
  workQueue: string
  retryExchange: string
  returnExchange: string
  retryQueues: Record<RetryTier, { queue: string; ttlMs: number }>
  deadExchange: string
  dlq: string
  sideQueues: (SideQueueSpec & { queue: string })[]
  /** The builder's output: the objects declared, and the consumer rule the failing consumer follows. */
  build: ThreeTierBuild
}

export class TopologyConflictError extends Error {
  override name = 'TopologyConflictError'
}

const threeTier = (base: string, routingKeys: readonly string[], delays: RetryDelays) =>
  buildThreeTier({ name: base, routingKeys: [...routingKeys], retryDelaysMs: [delays.short, delays.long], dlqMaxLength: DLQ_MAX_LENGTH })

export function appTopology(prefix: string, spec: AppTopologySpec, delays: RetryDelays): AppTopology {
  const base = `${prefix}.${spec.app}`
  const build = threeTier(base, spec.routingKeys, delays)
  const [short, long] = build.names.delayQueues as [string, string]
  return {
    app: spec.app,
    exchange: build.names.exchange,
    workQueue: build.names.workQueue,
    retryExchange: build.names.retryExchange,
    returnExchange: build.names.returnExchange,
    retryQueues: { short: { queue: short, ttlMs: delays.short }, long: { queue: long, ttlMs: delays.long } },
    deadExchange: build.names.parkingExchange,
    dlq: build.names.dlq,
    sideQueues: spec.sideQueues.map((side) => ({ ...side, queue: `${base}.${side.name}` })),
    build,
  }
}

function sideQueueArguments(kind: SideQueueKind, deadExchange: string): Record<string, unknown> {
  const dlx = { 'x-dead-letter-exchange': deadExchange }
  switch (kind) {
    case 'expiring':
      return { ...dlx, 'x-message-ttl': EXPIRING_QUEUE_TTL_MS }
    case 'capped':
      // drop-head is the default; spelled out because it is the behaviour being demonstrated.
      return { ...dlx, 'x-max-length': CAPPED_QUEUE_MAX_LENGTH, 'x-overflow': 'drop-head' }
    case 'no-retry':
      return dlx
  }
}

async function declareSideQueues(ch: Channel, t: AppTopology): Promise<void> {
  for (const side of t.sideQueues) {
    await ch.assertQueue(side.queue, { durable: true, arguments: sideQueueArguments(side.kind, t.deadExchange) })
    await ch.bindQueue(side.queue, t.exchange, side.routingKey)
  }
}

/**
 * Runs `probe` on a channel of its own: a failed passive declare closes the channel it ran on, and that must not be
 * one the caller is using.
 */
export async function onThrowawayChannel<T>(connection: ChannelModel, probe: (ch: Channel) => Promise<T>): Promise<T> {
  const ch = await connection.createChannel()
  ch.on('error', () => {}) // the rejected promise below carries the same error
  try {
    return await probe(ch)
  } finally {
    await ch.close().catch(() => {})
  }
}

/** Depth and consumers of a queue, or null when it does not exist. */
export async function inspectQueue(connection: ChannelModel, queue: string): Promise<Replies.AssertQueue | null> {
  try {
    return await onThrowawayChannel(connection, (ch) => ch.checkQueue(queue))
  } catch (error) {
    if ((error as { code?: number }).code === 404) return null
    throw error
  }
}

/**
 * Both delay profiles bind their first delay queue to the same retry exchange with the same keys. If queues of another
 * profile were still bound, every nack would be copied into both tiers and each retry would double the message.
 */
async function assertNoOtherDelayProfile(connection: ChannelModel, t: AppTopology, profiles: RetryDelays[]): Promise<void> {
  const own = new Set(Object.values(t.retryQueues).map((r) => r.queue))
  for (const delays of profiles) {
    for (const queue of threeTier(t.exchange, t.build.spec.routingKeys, delays).names.delayQueues) {
      if (own.has(queue) || !(await inspectQueue(connection, queue))) continue
      throw new TopologyConflictError(
        `${queue} exists from a run with other delays (--fast or not). Both would receive every retry; ` +
          `use another --prefix, or delete the ${t.exchange}.* queues and exchanges first.`,
      )
    }
  }
}

export async function declareAppTopology(connection: ChannelModel, topology: AppTopology): Promise<void> {
  await assertNoOtherDelayProfile(connection, topology, [DEMO_DELAYS, FAST_DELAYS])
  const ch = await connection.createChannel()
  try {
    // The builder declares its terminal path first, so nothing dead-letters before its DLQ exists.
    await declareObjects(ch, topology.build.objects)
    await declareSideQueues(ch, topology)
  } finally {
    await ch.close().catch(() => {})
  }
}

/** Removes everything `declareAppTopology` created, messages included. For tests and cleaning up after a demo. */
export async function deleteAppTopology(connection: ChannelModel, t: AppTopology): Promise<void> {
  const queues = [t.workQueue, ...Object.values(t.retryQueues).map((r) => r.queue), t.dlq, ...t.sideQueues.map((s) => s.queue)]
  await onThrowawayChannel(connection, async (ch) => {
    for (const queue of queues) await ch.deleteQueue(queue)
    for (const exchange of [t.exchange, t.retryExchange, t.returnExchange, t.deadExchange]) await ch.deleteExchange(exchange)
  })
}

/** The value for LAZARUS_SOURCES: the terminal DLQs, comma-separated. */
export function lazarusSources(topologies: readonly AppTopology[]): string {
  return topologies.map((t) => t.dlq).join(',')
}
