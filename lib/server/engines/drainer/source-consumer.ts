import 'server-only'
import type { Channel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { logAmqpError } from '@/lib/server/platform/broker/amqp-errors'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Sql } from '@/lib/server/platform/db/sql'
import { isConnectionError, isRetryableSqlError } from '@/lib/server/platform/db/sql'
import { buildRow } from '@/lib/server/ingest/build-row'
import { storeBatch, type IngestRow } from '@/lib/server/engines/drainer/store-batch'
import type { EntityKeyRule } from '@/lib/shared/schemas/source'
import type { Logger } from '@/lib/server/platform/log'
import { drainConsumerTag } from './consumer-tag'

/** kind 'hold': lazarus.hold, whose deliveries are messages pause guards parked (stored with status 'held'). */
export type DrainSource = { id: string; vhost: string; queue: string; entityKey: EntityKeyRule | null; kind?: 'dlq' | 'hold' }

export type SourceConsumerOptions = {
  source: DrainSource
  broker: BrokerConnection
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

/** What ack and nack read of a delivery; keeping only this lets the decoded headers go while the row waits. */
type Ackable = Pick<ConsumeMessage, 'fields'>
type Pending = { row: IngestRow; message: Ackable; bytes: number; arrivedAt: number }
/** amqplib's ack and nack read nothing of a message but fields.deliveryTag. */
const asMessage = (ackable: Ackable) => ackable as ConsumeMessage

const MAX_BATCH_BYTES = 32 * 1024 * 1024
const MAX_PARTIAL_WAIT_MS = 1_000
const MAX_BATCHES_IN_FLIGHT = 2
/** Past this many bytes held in memory, consumption pauses until the writer catches up. */
const PENDING_BYTES_HIGH = 192 * 1024 * 1024
const PENDING_BYTES_LOW = 64 * 1024 * 1024
/** Prefetch counts messages, not bytes: after a large body the channel asks for few deliveries at a time. */
const LARGE_BODY_BYTES = 1024 * 1024
const LARGE_BODY_PREFETCH = 8
const SMALL_BODIES_BEFORE_RESTORE = 1000

/**
 * Drains one DLQ on its own channel (so `ack(multiple)` covers exactly this consumer's deliveries).
 * Deliveries are normalised as they arrive, written in batches, and acknowledged only after the
 * batch's transaction committed. Writes are serialised: batch N+1 is written only after batch N was
 * acked, so acking the last delivery of a batch with `multiple` never acknowledges an unwritten one.
 */
export class SourceConsumer {
  private channel: Channel | null = null
  private consumerTag: string | null = null
  private pending: Pending[] = []
  private pendingBytes = 0
  private flushing: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  private ended = false
  private outageSince: number | null = null
  private throttled = false
  private lastArrival = 0
  private partialRequested = false
  private reducedPrefetch = false
  private smallSinceLarge = 0
  stored = 0

  constructor(private readonly options: SourceConsumerOptions) {}

  updateEntityKey(rule: EntityKeyRule | null): void {
    this.options.source.entityKey = rule
  }

  get queue(): string {
    return this.options.source.queue
  }

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
      maxBodyBytes: this.options.maxBodyBytes,
      status: this.options.source.kind === 'hold' ? 'held' : 'dead',
    })
    this.pending.push({ row, message: { fields: message.fields }, bytes: message.content.length, arrivedAt: Date.now() })
    this.pendingBytes += message.content.length
    this.adaptPrefetch(message.content.length)
    if (this.pendingBytes > PENDING_BYTES_HIGH && !this.throttled) {
      this.throttled = true
      void this.pauseConsuming()
    }
    this.lastArrival = Date.now()
    if (this.pending.length >= this.options.batchSize || this.pendingBytes >= MAX_BATCH_BYTES) void this.flush({ partial: false })
    else this.timer ??= setTimeout(() => this.onIdleTimer(), this.options.flushMs)
  }

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

  // basic.qos fails only on a channel that is closing, and that close ends the consumer (onEnd): the two ignored
  // failures below have nothing to add.
  private adaptPrefetch(bodyBytes: number): void {
    const channel = this.channel
    if (!channel) return
    if (bodyBytes >= LARGE_BODY_BYTES) {
      this.smallSinceLarge = 0
      if (!this.reducedPrefetch) {
        this.reducedPrefetch = true
        void channel.prefetch(LARGE_BODY_PREFETCH).catch(() => {})
      }
    } else if (this.reducedPrefetch && ++this.smallSinceLarge >= SMALL_BODIES_BEFORE_RESTORE) {
      this.reducedPrefetch = false
      void channel.prefetch(this.options.prefetch).catch(() => {})
    }
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

  private takeBatch(limit: number): Pending[] {
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
    // but they are acknowledged strictly in order: ack(multiple) on batch N+1 would also cover batch N.
    const inFlight: Promise<boolean>[] = []
    let acked: Promise<boolean> = Promise.resolve(true)
    for (let size = this.nextBatchSize(); size > 0 && !this.ended; size = this.nextBatchSize()) {
      const channel = this.channel
      const batch = this.takeBatch(size)
      if (this.pending.length === 0) this.partialRequested = false
      const stored = this.storeWithRetry(batch)
      const previous = acked
      acked = (async () => {
        const ok = await stored
        if (!(await previous) || !ok) return false
        // If the channel died meanwhile, these deliveries will be redelivered and de-duplicated by fingerprint.
        if (channel && channel === this.channel && !this.ended) {
          channel.ack(asMessage(batch[batch.length - 1].message), true)
          this.stored += batch.length
        }
        return true
      })()
      inFlight.push(acked)
      // Held messages are released in id order, so a hold source writes one batch at a time: ids follow arrival.
      const maxInFlight = this.options.source.kind === 'hold' ? 1 : MAX_BATCHES_IN_FLIGHT
      if (inFlight.length >= maxInFlight && !(await inFlight.shift())) break
      await this.resumeIfThrottled()
    }
    await acked
    await this.resumeIfThrottled()
  }

  private async resumeIfThrottled(): Promise<void> {
    if (!this.throttled || this.pendingBytes >= PENDING_BYTES_LOW || this.outageSince !== null || this.ended) return
    this.throttled = false
    await this.consume().catch((error) => logAmqpError('re-consume failed', error, { queue: this.queue }))
  }

  private async storeWithRetry(batch: Pending[]): Promise<boolean> {
    const { source, log } = this.options
    let delay = 250
    for (;;) {
      if (this.ended) return false
      try {
        await this.storeRows(batch.map((p) => p.row))
        if (this.outageSince !== null) {
          log.info('database is back; resuming', { queue: source.queue })
          this.outageSince = null
          this.options.onError(null)
          await this.consume().catch((error) => logAmqpError('re-consume failed', error, { queue: source.queue }))
        }
        return true
      } catch (error) {
        if (isRetryableSqlError(error)) continue
        const message = (error as Error).message
        if (!isConnectionError(error)) {
          this.options.onError(`cannot store messages: ${message}`)
          log.error('batch cannot be stored; draining paused for this source', { queue: source.queue, error: message })
        } else if (this.outageSince === null) {
          log.warn('database unavailable; holding deliveries and pausing consumption', { queue: source.queue, error: message })
          this.options.onError(`database unavailable: ${message}`)
        }
        this.outageSince ??= Date.now()
        await this.pauseConsuming()
        if (Date.now() - this.outageSince > this.options.maxHoldMs) {
          this.returnHeld(batch)
          return false
        }
        await sleep(delay)
        delay = Math.min(delay * 2, 5_000)
      }
    }
  }

  /** Stores a batch; if the batch is refused for its data, stores row by row so one bad row cannot block the rest. */
  private async storeRows(rows: IngestRow[]): Promise<void> {
    const { sql, source } = this.options
    const target = { sourceId: source.id, sourceLabel: source.queue }
    try {
      await storeBatch({ sql, ...target, rows })
    } catch (error) {
      if (isConnectionError(error) || isRetryableSqlError(error)) throw error
      if (rows.length > 1) {
        for (const row of rows) await this.storeRows([row])
        return
      }
      // A single row refused for its content is kept in a degraded but lossless form; if even that fails,
      // the error propagates and this source pauses rather than acking something that was not stored.
      await storeBatch({ sql, ...target, rows: [degradeRow(rows[0], error as Error)] })
    }
  }

  /** Past the hold bound the deliveries go back to the queue once (never a reject, never a loop). */
  private returnHeld(batch: Pending[]): void {
    const channel = this.channel
    const all = [...batch, ...this.pending]
    this.pending = []
    this.pendingBytes = 0
    if (channel && all.length > 0) channel.nack(asMessage(all[all.length - 1].message), true, true)
    this.options.log.warn('returned held deliveries to the queue after the hold bound', { queue: this.queue, count: all.length })
    void this.close('database unavailable past the hold bound')
  }

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

/** A row PostgreSQL refused for its content, in a form it accepts: the exact body, the headers as raw bytes, flagged. */
export function degradeRow(row: IngestRow, error: Error): IngestRow {
  const rawHeaders = Buffer.from(row.headersJson, 'utf8').toString('base64')
  return {
    ...row,
    // A typed byte array ('x' carries b64), so every reader of typed headers can show it.
    headersJson: JSON.stringify({ 'x-lazarus-unstorable-headers': { t: 'x', b64: rawHeaders } }),
    propertiesJson: row.propertiesJson.includes('\\u') ? '{}' : row.propertiesJson,
    flags: [...row.flags, 'stored-degraded', `store-error: ${error.message}`.slice(0, 200)],
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
