import 'server-only'
import type { Channel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { logAmqpError } from '@/lib/server/platform/broker/amqp-errors'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Sql } from '@/lib/server/platform/db/sql'
import { buildRow } from '@/lib/server/ingest/build-row'
import type { EntityKeyRule, EntityVersionRule } from '@/lib/shared/schemas/source'
import type { Logger } from '@/lib/server/platform/log'
import { BodyFlowControl } from './body-flow-control'
import { drainConsumerTag } from '@/lib/server/sources/consumer-tag'
import { DatabaseOutage } from './database-outage'
import type { DrainSource } from './load-drain-sources'
import { asMessage, type PendingDelivery } from './pending-delivery'

export type SourceConsumerOptions = {
  source: DrainSource
  broker: BrokerConnection
  /** The engines' pool (db.background): batches are stored on it. */
  sql: Sql
  log: Logger
  batchSize: number
  prefetch: number
  flushMs: number
  maxBodyBytes: number
  /** Longest deliveries are held unacked while the database is down before they are returned once (< consumer_timeout). */
  maxHoldMs: number
  /** Called whenever the consumer's health changes, so the source row and /api/sources can show it. */
  onError: (message: string | null) => void
  /** Called when the consumer ends for good (queue deleted, channel closed); the drainer restarts it later. */
  onEnd: (reason: string) => void
}

const MAX_BATCH_BYTES = 32 * 1024 * 1024
const MAX_PARTIAL_WAIT_MS = 1_000
const MAX_BATCHES_IN_FLIGHT = 2

/**
 * Drains one source on its own channel (so `ack(multiple)` covers exactly this consumer's deliveries), as
 * docs/ARCHITECTURE.md#draining describes: deliveries are normalised as they arrive (`onMessage`, the hot path),
 * gathered into batches (`flush`), stored, and acknowledged only after their batch's transaction committed, strictly
 * in order (`ackInOrder`). Flow control by bytes is BodyFlowControl's, storing through a database outage
 * DatabaseOutage's; what a crash at each step does is written at the top of drainer.ts.
 */
export class SourceConsumer {
  private channel: Channel | null = null
  private consumerTag: string | null = null
  private pending: PendingDelivery[] = []
  private pendingBytes = 0
  private flushing: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  private ended = false
  private lastArrival = 0
  private partialRequested = false
  private readonly flow: BodyFlowControl
  private readonly outage: DatabaseOutage
  stored = 0

  constructor(private readonly options: SourceConsumerOptions) {
    this.flow = new BodyFlowControl(options.prefetch)
    this.outage = new DatabaseOutage({
      sql: options.sql,
      source: options.source,
      log: options.log,
      maxHoldMs: options.maxHoldMs,
      onError: options.onError,
      pauseConsuming: () => this.pauseConsuming(),
      resumeConsuming: () => this.consume(),
      returnHeld: (batch) => this.returnHeld(batch),
      isEnded: () => this.ended,
    })
  }

  updateEntityKey(rule: EntityKeyRule | null, version: EntityVersionRule | null = null): void {
    this.options.source.entityKey = rule
    this.options.source.entityVersion = version
  }

  get queue(): string {
    return this.options.source.queue
  }

  // ── Consuming ──────────────────────────────────────────────────────────────────────────────────────────

  async start(): Promise<void> {
    const { broker, source, prefetch, log } = this.options
    // Consuming from a missing queue would close the channel: checked on a throw-away one first.
    const exists = await broker.queueExists(source.queue)
    if (!exists) throw new Error(`queue "${source.queue}" does not exist on vhost "${source.vhost}"`)
    const channel = await broker.createChannel({ context: { queue: source.queue } })
    this.channel = channel
    channel.on('close', () => this.end('channel closed'))
    await channel.prefetch(prefetch)
    await this.consume()
    log.info('draining', { queue: source.queue, prefetch })
  }

  private async consume(): Promise<void> {
    if (!this.channel || this.consumerTag) return
    const { consumerTag } = await this.channel.consume(this.queue, (message) => this.onMessage(message), {
      noAck: false,
      consumerTag: drainConsumerTag(this.options.source.id),
    })
    this.consumerTag = consumerTag
  }

  private async pauseConsuming(): Promise<void> {
    const tag = this.consumerTag
    if (!this.channel || !tag) return
    this.consumerTag = null
    // Cancelling neither requeues nor discards what we hold: those deliveries stay ours until acked or returned.
    // It fails only on a channel that is closing, and that close ends the consumer (onEnd): nothing to add here.
    await this.channel.cancel(tag).catch(() => {})
  }

  private async resumeIfThrottled(): Promise<void> {
    if (this.outage.since !== null || this.ended || !this.flow.release(this.pendingBytes)) return
    await this.consume().catch((error) => logAmqpError('re-consume failed', error, { queue: this.queue }))
  }

  /** Per delivery: no await here, and nothing allocated beyond the row and its place in the batch. */
  private onMessage(message: ConsumeMessage | null): void {
    if (message === null) {
      // The broker cancelled us: the queue was deleted (or its node went away).
      this.consumerTag = null
      this.options.onError(`queue "${this.queue}" was deleted or became unavailable`)
      void this.flush().finally(() => this.close('queue deleted'))
      return
    }
    const row = buildRow({
      queue: this.queue,
      message,
      entityKeyRule: this.options.source.entityKey,
      entityVersionRule: this.options.source.entityVersion,
      maxBodyBytes: this.options.maxBodyBytes,
      status: this.options.source.kind === 'hold' ? 'held' : 'dead',
    })
    this.pending.push({ row, message: { fields: message.fields }, bytes: message.content.length, arrivedAt: Date.now() })
    this.pendingBytes += message.content.length
    if (this.flow.afterDelivery(this.channel, message.content.length, this.pendingBytes)) void this.pauseConsuming()
    this.lastArrival = Date.now()
    if (this.pending.length >= this.options.batchSize || this.pendingBytes >= MAX_BATCH_BYTES) void this.flush({ partial: false })
    else this.timer ??= setTimeout(() => this.onIdleTimer(), this.options.flushMs)
  }

  // ── Batching ───────────────────────────────────────────────────────────────────────────────────────────

  /**
   * A partial batch is written once deliveries stop arriving for flushMs (or have waited a second): under load
   * the writer sees full batches of one size, whose prepared plan PostgreSQL reuses.
   */
  private onIdleTimer(): void {
    this.timer = null
    if (this.pending.length === 0 || this.ended) return
    const idle = Date.now() - this.lastArrival >= this.options.flushMs
    const waitedLong = Date.now() - this.pending[0].arrivedAt >= MAX_PARTIAL_WAIT_MS
    if (idle || waitedLong) void this.flush()
    else this.timer = setTimeout(() => this.onIdleTimer(), this.options.flushMs)
  }

  /**
   * Writes pending deliveries batch by batch; concurrent callers share the same run. `partial: false` writes
   * only full batches and leaves a remainder for the idle timer.
   */
  flush({ partial = true }: { partial?: boolean } = {}): Promise<void> {
    if (partial) this.partialRequested = true
    this.flushing ??= this.flushAll().finally(() => {
      this.flushing = null
      if (this.ended) return
      if (this.pending.length >= this.options.batchSize || (this.partialRequested && this.pending.length > 0)) void this.flush({ partial: this.partialRequested })
      else if (this.pending.length > 0) this.timer ??= setTimeout(() => this.onIdleTimer(), this.options.flushMs)
    })
    return this.flushing
  }

  /** Full batches; a partial remainder is cut to a multiple of 50 rows so the statement shapes stay few. */
  private nextBatchSize(): number {
    const { batchSize } = this.options
    const length = this.pending.length
    if (length >= batchSize || this.pendingBytes >= MAX_BATCH_BYTES) return batchSize
    if (!this.partialRequested || length === 0) return 0
    return length >= 100 ? length - (length % 50) : length
  }

  private takeBatch(limit: number): PendingDelivery[] {
    let bytes = 0
    let count = 0
    while (count < this.pending.length && count < limit && (count === 0 || bytes + this.pending[count].bytes <= MAX_BATCH_BYTES)) {
      bytes += this.pending[count].bytes
      count++
    }
    const batch = this.pending.splice(0, count)
    this.pendingBytes -= bytes
    return batch
  }

  private async flushAll(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    // Up to two batches are written at once (one inserts while the other takes its counter locks and commits),
    // but they are acknowledged strictly in order (ackInOrder).
    const inFlight: Promise<boolean>[] = []
    let acked: Promise<boolean> = Promise.resolve(true)
    for (let size = this.nextBatchSize(); size > 0 && !this.ended; size = this.nextBatchSize()) {
      const batch = this.takeBatch(size)
      if (this.pending.length === 0) this.partialRequested = false
      acked = this.ackInOrder(batch, this.channel, this.outage.store(batch), acked)
      inFlight.push(acked)
      // Held messages are released in id order, so a hold source writes one batch at a time: ids follow arrival.
      const maxInFlight = this.options.source.kind === 'hold' ? 1 : MAX_BATCHES_IN_FLIGHT
      if (inFlight.length >= maxInFlight && !(await inFlight.shift())) break
      await this.resumeIfThrottled()
    }
    await acked
    await this.resumeIfThrottled()
  }

  // ── Ack after commit, in order ─────────────────────────────────────────────────────────────────────────

  /**
   * Acks a batch with `multiple` once it is stored and the batch before it was acked: acking batch N+1 first would
   * also ack batch N, stored or not. False when this batch or an earlier one was not stored (nothing more is acked).
   */
  private async ackInOrder(batch: PendingDelivery[], channel: Channel | null, stored: Promise<boolean>, previous: Promise<boolean>): Promise<boolean> {
    const ok = await stored
    if (!(await previous) || !ok) return false
    // If the channel died meanwhile, these deliveries will be redelivered and de-duplicated by fingerprint.
    if (channel && channel === this.channel && !this.ended) {
      channel.ack(asMessage(batch[batch.length - 1].message), true)
      this.stored += batch.length
    }
    return true
  }

  /** Past the hold bound the deliveries go back to the queue once (never a reject, never a loop): DatabaseOutage. */
  private returnHeld(batch: PendingDelivery[]): void {
    const channel = this.channel
    const all = [...batch, ...this.pending]
    this.pending = []
    this.pendingBytes = 0
    if (channel && all.length > 0) channel.nack(asMessage(all[all.length - 1].message), true, true)
    this.options.log.warn('returned held deliveries to the queue after the hold bound', { queue: this.queue, count: all.length })
    void this.close('database unavailable past the hold bound')
  }

  // ── Ending ─────────────────────────────────────────────────────────────────────────────────────────────

  private end(reason: string): void {
    if (this.ended) return
    this.ended = true
    if (this.timer) clearTimeout(this.timer)
    // Unacked deliveries go back to the queue with the channel; dropping our copies is safe.
    this.pending = []
    this.pendingBytes = 0
    this.channel = null
    this.options.onEnd(reason)
  }

  async close(reason = 'stopped'): Promise<void> {
    const channel = this.channel
    this.end(reason)
    // Usually closed or closing already (that is why the consumer ends); either way it is closed.
    if (channel) await channel.close().catch(() => {})
  }

  /** Graceful stop: no new deliveries, write and ack what we hold, then close the channel. */
  async stop(): Promise<void> {
    await this.pauseConsuming()
    // A flush already running may have been for full batches only; keep going until nothing is held.
    while (!this.ended && (this.pending.length > 0 || this.flushing)) await this.flush()
    await this.close('stopped')
  }
}
