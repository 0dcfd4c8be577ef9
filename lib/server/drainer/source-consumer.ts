import 'server-only'
import type { Channel, ChannelModel, ConsumeMessage } from '@/lib/server/amqp/amqplib'
import type { Sql } from '@/lib/server/db/sql'
import { isConnectionError, isRetryableSqlError } from '@/lib/server/db/sql'
import { buildRow } from '@/lib/server/ingest/build-row'
import { storeBatch, type IngestRow } from '@/lib/server/ingest/store-batch'
import type { EntityKeyRule } from '@/lib/server/ingest/types'
import type { Logger } from '@/lib/server/log'

export type DrainSource = { id: string; vhost: string; queue: string; entityKey: EntityKeyRule | null }

export type SourceConsumerOptions = {
  source: DrainSource
  connection: ChannelModel
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

type Pending = { row: IngestRow; message: ConsumeMessage; bytes: number }

const MAX_BATCH_BYTES = 32 * 1024 * 1024

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
  stored = 0

  constructor(private readonly options: SourceConsumerOptions) {}

  get queue(): string {
    return this.options.source.queue
  }

  async start(): Promise<void> {
    const { connection, source, prefetch, log } = this.options
    const exists = await queueExists(connection, source.queue)
    if (!exists) throw new Error(`queue "${source.queue}" does not exist on vhost "${source.vhost}"`)
    const channel = await connection.createChannel()
    this.channel = channel
    channel.on('error', (error: Error) => log.warn('channel error', { queue: source.queue, error: error.message }))
    channel.on('close', () => this.end('channel closed'))
    await channel.prefetch(prefetch)
    await this.consume()
    log.info('draining', { queue: source.queue, prefetch })
  }

  private async consume(): Promise<void> {
    if (!this.channel || this.consumerTag) return
    const { consumerTag } = await this.channel.consume(this.queue, (message) => this.onMessage(message), { noAck: false })
    this.consumerTag = consumerTag
  }

  private async pauseConsuming(): Promise<void> {
    const tag = this.consumerTag
    if (!this.channel || !tag) return
    this.consumerTag = null
    // Cancelling neither requeues nor discards what we hold: those deliveries stay ours until acked or returned.
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
    })
    this.pending.push({ row, message, bytes: message.content.length })
    this.pendingBytes += message.content.length
    if (this.pending.length >= this.options.batchSize || this.pendingBytes >= MAX_BATCH_BYTES) void this.flush()
    else this.timer ??= setTimeout(() => void this.flush(), this.options.flushMs)
  }

  /** Writes everything pending, batch by batch; concurrent callers share the same run. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer)
      this.timer = null
    }
    this.flushing ??= this.flushAll().finally(() => {
      this.flushing = null
      if (this.pending.length > 0 && !this.ended) this.timer ??= setTimeout(() => void this.flush(), 0)
    })
    return this.flushing
  }

  private takeBatch(): Pending[] {
    let bytes = 0
    let count = 0
    while (count < this.pending.length && count < this.options.batchSize && (count === 0 || bytes + this.pending[count].bytes <= MAX_BATCH_BYTES)) {
      bytes += this.pending[count].bytes
      count++
    }
    const batch = this.pending.splice(0, count)
    this.pendingBytes -= bytes
    return batch
  }

  private async flushAll(): Promise<void> {
    while (this.pending.length > 0 && !this.ended) {
      const channel = this.channel
      const batch = this.takeBatch()
      const ok = await this.storeWithRetry(batch)
      if (!ok) return
      // If the channel died meanwhile, these deliveries will be redelivered and de-duplicated by fingerprint.
      if (channel && channel === this.channel && !this.ended) {
        channel.ack(batch[batch.length - 1].message, true)
        this.stored += batch.length
      }
    }
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
          await this.consume().catch((error) => log.warn('re-consume failed', { error: (error as Error).message }))
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
      await storeBatch(sql, { ...target, rows })
    } catch (error) {
      if (isConnectionError(error) || isRetryableSqlError(error)) throw error
      if (rows.length > 1) {
        for (const row of rows) await this.storeRows([row])
        return
      }
      // A single row refused for its content is kept in a degraded but lossless form; if even that fails,
      // the error propagates and this source pauses rather than acking something that was not stored.
      await storeBatch(sql, { ...target, rows: [degrade(rows[0], error as Error)] })
    }
  }

  /** Past the hold bound the deliveries go back to the queue once (never a reject, never a loop). */
  private returnHeld(batch: Pending[]): void {
    const channel = this.channel
    const all = [...batch, ...this.pending]
    this.pending = []
    this.pendingBytes = 0
    if (channel && all.length > 0) channel.nack(all[all.length - 1].message, true, true)
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
    if (channel) await channel.close().catch(() => {})
  }

  /** Graceful stop: no new deliveries, write and ack what we hold, then close the channel. */
  async stop(): Promise<void> {
    await this.pauseConsuming()
    if (!this.ended) await this.flush()
    await this.close('stopped')
  }
}

function degrade(row: IngestRow, error: Error): IngestRow {
  const rawHeaders = Buffer.from(row.headersJson, 'utf8').toString('base64')
  return {
    ...row,
    headersJson: JSON.stringify({ 'x-lazarus-unstorable-headers': { t: 'x', v: rawHeaders } }),
    propertiesJson: row.propertiesJson.includes('\\u') ? '{}' : row.propertiesJson,
    flags: [...row.flags, 'stored-degraded', `store-error: ${error.message}`.slice(0, 200)],
  }
}

async function queueExists(connection: ChannelModel, queue: string): Promise<boolean> {
  // A missing queue closes the channel (404), so probe on a throw-away one.
  const probe = await connection.createChannel()
  probe.on('error', () => {})
  try {
    await probe.checkQueue(queue)
    await probe.close().catch(() => {})
    return true
  } catch {
    return false
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
