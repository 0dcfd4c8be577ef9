import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { recordOutcomes, type ItemOutcome } from './job-store'
import type { RunControl } from './run-control'
import type { RateMeter } from './token-bucket'

/** Outcome batches written at the same time (database connections one job uses for them). */
const MAX_FLUSHES = 2
/** A partial batch waits at most this long for more outcomes. */
const FLUSH_AFTER_MS = 100

export type OutcomeWriterOptions = {
  sql: Sql
  jobId: string
  /** The job's creator: the actor of the messages' status changes. */
  actor: string
  /** Outcomes per batch: min(window, rate, 1000). */
  batchSize: number
  /** Settled outcomes waiting to be written past which publishing waits (the database is behind or away). */
  maxWaiting: number
  control: RunControl
  meter: RateMeter
  log: Logger
}

/**
 * Writes settled outcomes in batches, one transaction per batch (recordOutcomes), never one statement per message,
 * on up to MAX_FLUSHES connections at once. While the database is away a batch is retried with backoff and the
 * outcomes wait in memory; publishing waits once `maxWaiting` of them do. A batch that cannot be written before the
 * run stops leaves its items in flight: the next run publishes them again (docs/ARCHITECTURE.md#outcomes).
 */
export class OutcomeWriter {
  private settled: ItemOutcome[] = []
  private readonly flushes = new Set<Promise<void>>()
  private flushTimer: NodeJS.Timeout | null = null

  constructor(private readonly options: OutcomeWriterOptions) {}

  /** Whether publishing must wait for the writes to catch up. */
  backlogFull(): boolean {
    return this.settled.length >= this.options.maxWaiting
  }

  settle(outcome: ItemOutcome): void {
    this.settled.push(outcome)
    if (this.settled.length >= this.options.batchSize) this.flush()
    else this.scheduleFlush()
  }

  /** Every settled outcome written, including those settling while earlier batches were being written. */
  async flushAll(): Promise<void> {
    while (this.settled.length > 0 || this.flushes.size > 0) {
      this.flush()
      await Promise.all(this.flushes)
    }
  }

  /** The last flush of a run that ends, for whatever reason. */
  async close(): Promise<void> {
    // writeOutcomes logs its own failures and resolves: a rejection here would be a bug, not an outage.
    await this.flushAll().catch((error: unknown) => this.options.log.error('replay outcomes not flushed', { job: this.options.jobId, error: (error as Error).message }))
    if (this.flushTimer) clearTimeout(this.flushTimer)
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.settled.length === 0) return
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null
      this.flush()
    }, FLUSH_AFTER_MS)
  }

  /**
   * Starts writing what has settled, on up to MAX_FLUSHES connections at once (each batch is one transaction over
   * disjoint items), so the database keeps up with the broker; a batch that arrives while they are busy waits and
   * grows. Only the last batches' writes stand between the broker's acks and the job's end.
   */
  private flush(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer)
      this.flushTimer = null
    }
    while (this.flushes.size < MAX_FLUSHES && this.settled.length > 0) {
      const outcomes = this.settled
      this.settled = []
      const write = this.writeOutcomes(outcomes).finally(() => {
        this.flushes.delete(write)
        if (this.settled.length >= this.options.batchSize) this.flush()
        else this.scheduleFlush()
        this.options.control.wake()
      })
      this.flushes.add(write)
    }
  }

  private async writeOutcomes(outcomes: ItemOutcome[]): Promise<void> {
    const { sql, jobId, actor, control, meter, log } = this.options
    try {
      await control.retry('record replay outcomes', () => recordOutcomes({ sql, jobId, actor, outcomes, rate: meter.perSecond() }), { evenWhenStopping: true })
    } catch (error) {
      // Not recorded (stopped while the database was away): the items stay in flight and go out again later.
      log.warn('replay outcomes not recorded', { job: jobId, count: outcomes.length, error: (error as Error).message })
    }
  }
}
