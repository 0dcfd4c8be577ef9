import 'server-only'

/**
 * The drainer: one consumer per enabled source, each storing its deliveries in batches and acking them after the
 * commit (docs/ARCHITECTURE.md#draining). Its crash reasoning, once for the whole folder
 * (docs/ARCHITECTURE.md#where-crash-safety-comes-from):
 *
 * A delivery is acked only after the transaction that stored its row committed, and a stored row is identified by
 * its fingerprint, unique per source (docs/ARCHITECTURE.md#idempotency). So at every step below a delivery is either
 * still unacked at the broker, which redelivers it when its channel closes, or stored; and storing it again changes
 * nothing.
 *
 * 1. **Received, normalised, waiting for its batch (before store).** It exists only in this process's memory and
 *    unacked at the broker. The process dies, or the broker (connection) goes away: the channel closes, the broker
 *    requeues every unacked delivery, and they are drained again (by this process once it reconnects, or by another
 *    drainer). The database goes away: the store fails with a connection error and the consumer holds its deliveries
 *    (database-outage.ts) until the database answers again.
 * 2. **Mid-transaction** (store-batch.ts: groups, rows, the row-count check, counters, search backlog, drained_count
 *    in one transaction). The process or the database dies: PostgreSQL rolls the transaction back, so nothing of the
 *    batch exists, new error groups included (the process remembers a group's id only after its batch committed).
 *    After a database failure the consumer retries the whole batch in a new transaction; after a process death the
 *    broker redelivers it. The broker goes away: the transaction may still commit, but the ack cannot be sent on the
 *    closed channel (ackInOrder acks only on the channel the deliveries came on): case 3.
 * 3. **After the commit, before the ack.** The process dies or the channel closes: the broker redelivers the batch.
 *    Every redelivered row conflicts on (source_id, fingerprint): no row is added, `seen_count` stays (a redelivered
 *    copy subtracts the 1 it adds), and the counters, arrivals, search backlog and `drained_count` grow only by rows
 *    that were really new. A duplicate is therefore harmless; a competing drainer on the same queue is safe for the
 *    same reason. Batches are acked strictly in order, so `ack(multiple)` never covers a batch that was not stored.
 * 4. **During the requeue** (database down past the hold bound: `nack(multiple, requeue)` of what is held, then the
 *    consumer ends). Dying before the nack closes the channel, which requeues the same deliveries; dying after it
 *    changes nothing. A batch stored meanwhile but not yet acked may be requeued with the rest: case 3. The deliveries
 *    are never rejected, so they never reach a dead-letter exchange and are never lost.
 *
 * A graceful stop writes and acks what it holds; a process killed during it (the 15-second cap) is one of the cases
 * above. The tests that kill processes at these points: tests/integration/drain-crash-safety.test.ts and
 * drain-database-outage.test.ts.
 */

import { logAmqpError } from '@/lib/server/platform/broker/amqp-errors'
import { amqpVhost } from '@/lib/server/platform/broker/amqp-url'
import { openBrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { Signal } from '@/lib/server/platform/signal'
import { logger } from '@/lib/server/platform/log'
import { describeConsumeFailure } from './consume-failure'
import { loadDrainSources, type DrainSource } from './load-drain-sources'
import { SourceConsumer } from './source-consumer'
import { SourceErrors } from './source-errors'

export type DrainerState = 'starting' | 'running' | 'broker-unavailable' | 'stopped'

export type DrainerStatus = {
  state: DrainerState
  brokerError: string | null
  sources: { id: string; queue: string; draining: boolean; stored: number; error: string | null }[]
}

export type StartDrainerOptions = {
  /** The drainer reads sources and stores batches on `db.background`, the engines' pool. */
  db: Db
  config: Pick<Config, 'AMQP_URL' | 'LAZARUS_DRAIN_BATCH' | 'LAZARUS_DRAIN_PREFETCH' | 'LAZARUS_DRAIN_FLUSH_MS' | 'LAZARUS_MAX_BODY_BYTES'>
  /**
   * How often the source list is re-read and stopped consumers are restarted (LAZARUS_DRAIN_RECONCILE_MS). Changes made
   * through this process's API apply at once (`sourcesChanged`); this interval is for other processes' changes.
   */
  reconcileMs?: number
  /** The composition root's nudge: a source this process's API changed is applied now, and the API waits for it. */
  sourcesChanged?: Signal
  maxHoldMs?: number
  connectionName?: string
}

export type Drainer = { status(): DrainerStatus; stop(): Promise<void>; reconcile(): Promise<void> }

const log = logger('drainer')

/**
 * Keeps one consumer per enabled source on a dedicated connection (draining never shares a connection
 * with publishing: a blocked publisher must not stall consumption). The connection recovers on its own
 * (lib/server/platform/broker) and the consumers start again on the new one; consumers whose queue disappeared are
 * restarted once it exists again, and sources added through the API by any process are picked up.
 */
export function startDrainer(options: StartDrainerOptions): Drainer {
  const { config } = options
  const sql = options.db.background
  const reconcileMs = options.reconcileMs ?? 5_000
  const vhost = amqpVhost(config.AMQP_URL)
  const consumers = new Map<string, SourceConsumer>()
  const errors = new SourceErrors({ sql, log })
  const broker = openBrokerConnection({ url: config.AMQP_URL, name: options.connectionName ?? 'lazarus-drainer' })
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  /** Reconciles run one at a time, each after the one before: the timer's and the API's (onSourcesChanged) queue up. */
  let reconciling: Promise<void> = Promise.resolve()
  const reconcileInTurn = (): Promise<void> => {
    reconciling = reconciling.then(() =>
      reconcile().catch((error: unknown) => {
        log.error('reconcile failed', { error: (error as Error).message })
      }),
    )
    return reconciling
  }
  const offSourcesChanged = options.sourcesChanged?.listen(reconcileInTurn) ?? (() => {})

  // The consumers' channels closed with the connection (each ends itself); they start again once it is back.
  const offDisconnect = broker.on('disconnect', () => consumers.clear())
  const offConnect = broker.on('connect', () => schedule(0))

  function state(): { state: DrainerState; brokerError: string | null } {
    if (stopped) return { state: 'stopped', brokerError: null }
    const { state, error } = broker.status()
    if (state === 'connected') return { state: 'running', brokerError: null }
    if (state === 'idle' || state === 'connecting') return { state: 'starting', brokerError: null }
    return { state: 'broker-unavailable', brokerError: error }
  }

  /** Stops the consumers of sources no longer enabled, and starts one for each enabled source without one. */
  async function reconcile(): Promise<void> {
    if (stopped || !broker.connected) return
    let sources: DrainSource[]
    try {
      sources = await loadDrainSources({ sql })
    } catch (error) {
      log.warn('cannot read sources from the database', { error: (error as Error).message })
      return
    }
    const wanted = new Set(sources.map((s) => s.id))
    for (const [id, consumer] of consumers) {
      if (!wanted.has(id)) {
        consumers.delete(id)
        await consumer.stop()
      }
    }
    for (const source of sources) {
      // stop() may have run while this reconcile awaited: a consumer started now would never be stopped.
      if (stopped) return
      const running = consumers.get(source.id)
      if (running) {
        // Settings edited through the API apply to the next delivery, without restarting the consumer.
        running.updateEntityKey(source.entityKey, source.entityVersion ?? null)
        continue
      }
      // One connection serves one vhost: the one AMQP_URL names.
      if (source.vhost !== vhost) {
        errors.record(source, `vhost "${source.vhost}" is not drained: AMQP_URL connects to vhost "${vhost}"`)
        continue
      }
      await startConsumer(source)
    }
  }

  async function startConsumer(source: DrainSource): Promise<void> {
    const consumer = new SourceConsumer({
      source,
      broker,
      sql,
      log,
      batchSize: config.LAZARUS_DRAIN_BATCH,
      prefetch: Math.max(config.LAZARUS_DRAIN_PREFETCH, config.LAZARUS_DRAIN_BATCH + 1),
      flushMs: config.LAZARUS_DRAIN_FLUSH_MS,
      maxBodyBytes: config.LAZARUS_MAX_BODY_BYTES,
      maxHoldMs: options.maxHoldMs ?? 20 * 60_000,
      onError: (message) => errors.record(source, message),
      onEnd: (reason) => {
        if (consumers.get(source.id) === consumer) consumers.delete(source.id)
        if (!stopped && reason !== 'stopped' && reason !== 'start failed') log.warn('consumer ended; will retry', { queue: source.queue, reason })
      },
    })
    consumers.set(source.id, consumer)
    try {
      await consumer.start()
      errors.record(source, null)
    } catch (error) {
      consumers.delete(source.id)
      await consumer.close('start failed')
      const message = describeConsumeFailure(error, source.queue)
      if (!errors.isCurrent(source.id, message)) logAmqpError('cannot drain source', error, { queue: source.queue, reason: message })
      errors.record(source, message)
    }
  }

  function schedule(ms: number) {
    if (stopped) return
    if (timer) clearTimeout(timer)
    timer = setTimeout(async () => {
      timer = null
      await reconcileInTurn()
      schedule(reconcileMs)
    }, ms)
  }

  schedule(0)

  return {
    status: () => ({
      ...state(),
      sources: [...consumers].map(([id, c]) => ({ id, queue: c.queue, draining: true, stored: c.stored, error: errors.get(id) })),
    }),
    reconcile: reconcileInTurn,
    async stop() {
      stopped = true
      offSourcesChanged()
      offConnect()
      offDisconnect()
      if (timer) clearTimeout(timer)
      // A reconcile under way (a timer's, or one a source change asked for) ends before the consumers are stopped.
      await reconciling.catch(() => {})
      // A consumer that cannot write what it holds leaves it unacked: the broker requeues it when the connection closes.
      await Promise.all([...consumers.values()].map((c) => c.stop().catch((error: unknown) => log.warn('consumer did not stop cleanly; unwritten deliveries go back to the queue', { queue: c.queue, error: (error as Error).message }))))
      consumers.clear()
      await broker.close()
    },
  }
}
