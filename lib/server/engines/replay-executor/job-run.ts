import 'server-only'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { NatsLink } from '@/lib/server/platform/broker/nats-link'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import type { ReplaySettings } from '@/lib/server/replay/replay-settings'
import { appendReleaseItems, resumeJobPauses } from '@/lib/server/engines/release/job-releases'
import { endJob } from './end-job'
import { closeOpenItems } from '@/lib/server/replay/replay-store'
import { claimItems, lastSeq, type ItemRow, type JobRow } from './job-store'
import { LeaseKeeper } from './lease-keeper'
import { OutcomeWriter } from './outcome-writer'
import { Publisher } from './publisher'
import { JetStreamPublisher } from './jetstream-publisher'
import { RunControl, RunStopped } from './run-control'
import { RateMeter } from './token-bucket'
import { StageControl } from './stage-control'

export type JobRunContext = {
  db: Db; control: ExchangePublisher; settings: ReplaySettings; owner: string; broker: BrokerConnection
  /** JetStream items go out through it (docs/jetstream.md#replay); null without LAZARUS_NATS_URL. */
  nats: NatsLink | null
  log: Logger
}

/**
 * Items claimed per query (and fewer for slow jobs, so what counts as in flight stays close to what really is), and the most
 * body bytes one claim may hold. 500 replays faster than 1000, whose rows outlive the young generation, and than 250
 * (figures: CHANGELOG.md).
 */
const CHUNK_ITEMS = 500
const MIN_CHUNK_ITEMS = 50
/** Chunks claimed ahead of the one being published. */
const CLAIMS_AHEAD = 1
const CHUNK_BYTES = 32 * 1024 * 1024
/** After this many failed runs (not counting broker or database outages) a job is failed for good. */
const MAX_RUN_FAILURES = 5

/**
 * One claimed job, published in seq order through its own ConfirmChannel. The run claims chunks and hands them on:
 *
 * - items are claimed in chunks, the job's claimed_through raised past them by the same statement, before any of them
 *   is published, so after a crash only open items at or below it (in flight) can have reached the broker, and they
 *   are published again with the same x-lazarus-replay-id;
 * - the Publisher sends them: a message counts as replayed only after the broker's ack with no basic.return before
 *   it (mandatory publishes, returns correlated by replay id); a nack, return, closed channel or confirm timeout
 *   leaves it dead, with the reason; unconfirmed publishes are capped by the window, `drain` is honoured, a 'blocked'
 *   connection pauses publishing, and a token bucket holds the job's rate;
 * - the OutcomeWriter writes outcomes in batches (one transaction per batch), never one statement per message;
 * - the LeaseKeeper renews the lease, and notices a cancel request or a lease another worker took;
 * - on shutdown the run stops publishing, waits up to 5 s for the confirms it is owed, writes what it knows and gives
 *   the lease back; a run that fails for another reason than an outage counts as a failed run (the executor gives
 *   the lease back with run_failures + 1), and after MAX_RUN_FAILURES of them the job fails.
 */
export class JobRun {
  /** db.background, the pool without statement timeouts. */
  private readonly sql: Sql
  private readonly control: RunControl
  private readonly lease: LeaseKeeper
  private readonly outcomes: OutcomeWriter
  private readonly publisher: Publisher
  private readonly jetStreamPublisher: JetStreamPublisher
  /** A staged job's stage, windows and halts; null when the job is published straight through. */
  private stages: StageControl | null = null
  private done: Promise<void> | null = null

  constructor(
    private readonly ctx: JobRunContext,
    private readonly job: JobRow,
  ) {
    const { settings, owner, broker, log } = ctx
    const sql = ctx.db.background
    this.sql = sql
    const jobId = job.id
    const meter = new RateMeter()
    this.control = new RunControl({ sql, jobId, owner, log, cancelRequested: job.cancel_requested_at !== null })
    this.outcomes = new OutcomeWriter({
      sql, jobId, actor: job.created_by, control: this.control, meter, log,
      batchSize: Math.max(1, Math.min(settings.window, job.rate_per_second, 1000)),
      maxWaiting: settings.window * 4,
    })
    this.lease = new LeaseKeeper({ sql, jobId, owner, leaseMs: settings.leaseMs, control: this.control, meter, log, onBeat: () => this.publisher.checkConfirmTimeout() })
    this.publisher = new Publisher({ job, settings, broker, control: this.control, lease: this.lease, outcomes: this.outcomes, meter, log })
    this.jetStreamPublisher = new JetStreamPublisher({ job, settings, nats: ctx.nats, control: this.control, lease: this.lease, outcomes: this.outcomes, meter, log })
  }

  run(): Promise<void> {
    this.done ??= this.execute()
    return this.done
  }

  /** Stops publishing, waits briefly for outstanding confirms, records what is known and gives the lease back. */
  async stop(): Promise<void> {
    this.control.stopping = true
    this.control.wake()
    // The run's failure is the executor's to log and count (start() in executor.ts); stop only waits for the end.
    await this.done?.catch(() => {})
  }

  wake(): void {
    this.control.wake()
  }

  private async execute(): Promise<void> {
    const { sql, job, control } = this
    const jobId = job.id
    this.lease.start()
    try {
      if (job.run_failures >= MAX_RUN_FAILURES) {
        await this.fail(`gave up after ${job.run_failures} failed attempts`)
        return
      }
      if (job.staged) this.stages = await StageControl.load({ sql, jobId, owner: this.ctx.owner, control, log: this.ctx.log })
      if (this.stages && !control.cancelRequested) {
        if (!(await this.publishStages(this.stages))) return
      } else {
        await this.publishAll()
        await this.checkpoint()
      }
      if (control.cancelRequested) {
        await sql.transaction((tx) => closeOpenItems({ sql: tx, jobId, actor: job.created_by, status: 'cancelled', reason: 'replay cancelled', kinds: ['replay'] }))
      }
      // Releases follow the replayed messages (docs/ARCHITECTURE.md#pause-hold-release), cancelled or not: the pauses
      // end either way.
      control.honourCancel = false
      const appended = await sql.transaction((tx) => appendReleaseItems({ sql: tx, jobId }))
      if (appended > 0) {
        await this.publishAll()
        await this.checkpoint()
      }
      await resumeJobPauses({ db: this.ctx.db, control: this.ctx.control, jobId, actor: job.created_by })
      await this.finish(control.cancelRequested ? 'cancelled' : 'completed')
    } catch (error) {
      if (!(error instanceof RunStopped)) throw error
    } finally {
      this.lease.stop()
      await this.outcomes.close()
      await this.publisher.close()
      if (control.stopping && !control.leaseLost) await this.lease.giveBack()
    }
  }

  /** Every publish answered and every outcome written; throws RunStopped when the run must end without finishing the job. */
  private async checkpoint(): Promise<void> {
    await Promise.all([this.publisher.awaitConfirms(), this.jetStreamPublisher.awaitConfirms()])
    await this.outcomes.flushAll()
    if (this.control.mustEnd()) throw new RunStopped()
  }

  private async finish(status: 'completed' | 'cancelled' | 'failed', error: string | null = null): Promise<void> {
    await endJob({ sql: this.sql, jobId: this.job.id, owner: this.ctx.owner, status, error })
    this.ctx.log.info('replay job finished', { job: this.job.id, status })
  }

  /**
   * Publishes a staged job stage by stage (stage-control.ts). True when every stage is out (or a cancel came); false
   * when the run ends here: the job halted, or it observes a window without holding the lease.
   */
  private async publishStages(stages: StageControl): Promise<boolean> {
    const { control } = this
    for (;;) {
      const step = await stages.step()
      if (step.kind === 'deferred') return false
      if (step.kind === 'done' || control.cancelRequested) return true
      if (step.kind === 'publish') {
        await this.publishAll(stages.bound())
        await this.checkpoint()
      }
      if (control.halted) {
        await this.lease.giveBack()
        return false
      }
      if (control.cancelRequested) return true
      await stages.published()
    }
  }

  /** A job that keeps failing: its open items fail (their messages stay dead), its pauses end. */
  private async fail(reason: string): Promise<void> {
    const { sql } = this
    const { id: jobId, created_by: actor } = this.job
    await sql.transaction((tx) => closeOpenItems({ sql: tx, jobId, actor, status: 'failed', reason: `replay failed: ${reason}`, kinds: ['replay', 'release'] }))
    await resumeJobPauses({ db: this.ctx.db, control: this.ctx.control, jobId, actor })
    await this.finish('failed', reason)
  }

  /**
   * Publishes every open item in seq order. Each chunk is claimed (claimed_through raised) in one statement, about a second
   * of publishing at the job's rate (at most CHUNK_ITEMS); claims run back to back, up to CLAIMS_AHEAD chunks ahead of
   * the one going out, so a slow claim does not stall publishing.
   */
  private async publishAll(through = Number.POSITIVE_INFINITY): Promise<void> {
    const { sql, control } = this
    const jobId = this.job.id
    const limit = Math.min(CHUNK_ITEMS, Math.max(MIN_CHUNK_ITEMS, this.job.rate_per_second))
    // `through`: a staged job's stage ends there, and no claim reaches past it.
    const last = Math.min(through, await control.retry('read replay items', () => lastSeq({ sql, jobId })))
    type Claimed = { rows: ItemRow[]; cursor: number }
    const claim = async (after: number): Promise<Claimed> => {
      const span = Math.min(limit * 8, last - after)
      const rows = await control.retry('read replay items', () => claimItems({ sql, jobId, afterSeq: after, span, limit, maxBytes: CHUNK_BYTES }))
      // An empty span (items a previous run finished) moves the cursor past it.
      return { rows, cursor: rows.length > 0 ? rows[rows.length - 1].seq : after + span }
    }
    const ahead: Promise<Claimed | null>[] = []
    let tail: Promise<Claimed | null> = Promise.resolve({ rows: [], cursor: 0 })
    const refill = () => {
      while (ahead.length < CLAIMS_AHEAD) {
        tail = tail.then((previous) => (previous === null || previous.cursor >= last || control.mustStopPublishing() ? null : claim(previous.cursor)))
        // Its failure is thrown where `ahead` is awaited; this only keeps a claim nobody awaits (the run stopped) from
        // being an unhandled rejection.
        tail.catch(() => {})
        ahead.push(tail)
      }
    }
    refill()
    for (;;) {
      const claimed = await ahead.shift()!
      if (claimed === null || control.mustStopPublishing()) break
      refill()
      if (claimed.rows.length > 0) await this.publishChunk(claimed.rows)
      if (this.stages && !control.mustStopPublishing()) await this.stages.checkWhilePublishing()
      if (control.mustStopPublishing()) break
    }
    // Chunks claimed but not published stay in flight: a cancel closes them, another run publishes them.
    await Promise.allSettled(ahead)
  }

  /**
   * Hands a chunk to the publisher of each item's broker, in seq order: a run of RabbitMQ items to the Publisher, a run
   * of JetStream items to the JetStreamPublisher (most jobs have one broker, and the chunk goes whole).
   */
  private async publishChunk(rows: ItemRow[]): Promise<void> {
    let start = 0
    for (let end = 1; end <= rows.length; end++) {
      if (end < rows.length && rows[end].broker === rows[start].broker) continue
      const run = start === 0 && end === rows.length ? rows : rows.slice(start, end)
      await (rows[start].broker === 'jetstream' ? this.jetStreamPublisher : this.publisher).publishChunk(run)
      if (this.control.mustStopPublishing()) return
      start = end
    }
  }
}
