import 'server-only'
import { logAmqpError } from '@/lib/server/platform/broker/amqp-errors'
import { isConnectionError, isRetryableSqlError, type Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import type { DrainSource } from './load-drain-sources'
import type { PendingDelivery } from './pending-delivery'
import { storeBatchOrDegrade } from './store-batch-or-degrade'

const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5_000

export type DatabaseOutageOptions = {
  sql: Sql
  source: DrainSource
  log: Logger
  /** Longest deliveries are held unacked while the database is down before they are returned once (< consumer_timeout). */
  maxHoldMs: number
  /** The source's health, for the source row and /api/sources. */
  onError: (message: string | null) => void
  /** Cancels the consumer: no new deliveries, and those delivered stay held, unacked. */
  pauseConsuming: () => Promise<void>
  /** Consumes again. */
  resumeConsuming: () => Promise<void>
  /** Returns the batch and every delivery waiting behind it to the queue, once, and ends the consumer. */
  returnHeld: (batch: PendingDelivery[]) => void
  isEnded: () => boolean
}

/**
 * How one source's consumer stores a batch while the database may be away (docs/ARCHITECTURE.md#draining, "A database
 * outage"):
 *
 * - **Hold.** On a connection error the consumer is cancelled (which neither requeues nor discards what was delivered)
 *   and the deliveries stay in memory, unacked.
 * - **Retry.** The batch is written again after 250 ms, doubling up to 5 s. Once it is stored, the source's error is
 *   cleared and consuming resumes.
 * - **Requeue once.** Past `maxHoldMs` (20 minutes, inside RabbitMQ's 30-minute delivery acknowledgement timeout) the
 *   held deliveries go back to the queue with `nack(requeue)`: once, never rejected and never in a loop
 *   (docs/rabbitmq.md#safe-draining).
 *
 * A batch refused for its content even in degraded form is held and retried the same way: it is never acked unstored.
 * The crash reasoning for all of this is at the top of drainer.ts.
 */
export class DatabaseOutage {
  /** When the outage began; null while the database answers. */
  since: number | null = null

  constructor(private readonly options: DatabaseOutageOptions) {}

  /** Stores the batch, through an outage if need be: true once stored, false if the consumer ended or returned it. */
  async store(batch: PendingDelivery[]): Promise<boolean> {
    const { sql, source } = this.options
    let delay = FIRST_RETRY_MS
    for (;;) {
      if (this.options.isEnded()) return false
      try {
        await storeBatchOrDegrade({ sql, sourceId: source.id, sourceLabel: source.queue, rows: batch.map((p) => p.row) })
        if (this.since !== null) await this.end()
        return true
      } catch (error) {
        if (isRetryableSqlError(error)) continue
        // Read before the await: another batch may end the outage meanwhile, and a cleared `since` must not count as
        // a hold of 56 years.
        const since = this.begin(error)
        await this.options.pauseConsuming()
        if (Date.now() - since > this.options.maxHoldMs) {
          this.options.returnHeld(batch)
          return false
        }
        await sleep(delay)
        delay = Math.min(delay * 2, MAX_RETRY_MS)
      }
    }
  }

  /** Says why the batch is held (every time for a refused batch, once per outage for a database that went away); returns when the outage began. */
  private begin(error: unknown): number {
    const { source, log, onError } = this.options
    const message = (error as Error).message
    if (!isConnectionError(error)) {
      onError(`cannot store messages: ${message}`)
      log.error('batch cannot be stored; draining paused for this source', { queue: source.queue, error: message })
    } else if (this.since === null) {
      log.warn('database unavailable; holding deliveries and pausing consumption', { queue: source.queue, error: message })
      onError(`database unavailable: ${message}`)
    }
    this.since ??= Date.now()
    return this.since
  }

  private async end(): Promise<void> {
    const { source, log } = this.options
    log.info('database is back; resuming', { queue: source.queue })
    this.since = null
    this.options.onError(null)
    await this.options.resumeConsuming().catch((error) => logAmqpError('re-consume failed', error, { queue: source.queue }))
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
