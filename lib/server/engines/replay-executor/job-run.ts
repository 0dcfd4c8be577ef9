import 'server-only'
import { IllegalOperationError, type ConfirmChannel, type ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { publishHeadersSlot } from '@/lib/server/platform/broker/typed-fields'
import { Backoff } from '@/lib/server/platform/broker/backoff'
import type { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { appendReleaseItems, resumeJobPauses } from '@/lib/server/pauses/job-pauses'
import {
  claimItems,
  closeOpenItems,
  finishJob,
  lastSeq,
  pollJob,
  recordOutcomes,
  renewLease,
  setJobError,
  type ItemOutcome,
  type ItemRow,
  type JobRow,
} from './job-store'
import { buildPublish, type PublishBuild } from './publish-message'
import type { ReplaySettings } from '@/lib/server/replay/replay-settings'
import { InFlightWindow } from './in-flight-window'
import { RateMeter, TokenBucket } from './token-bucket'

export type JobRunContext = { sql: Sql; settings: ReplaySettings; owner: string; broker: BrokerConnection; log: Logger }

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
const HEARTBEAT_MS = 200
/** After this many failed runs (not counting broker or database outages) a job is failed for good. */
const MAX_RUN_FAILURES = 5
/** On shutdown, how long to wait for outstanding confirms before leaving them to the next worker. */
const STOP_GRACE_MS = 5_000
/** Outcome batches written at the same time (database connections one job uses for them). */
const MAX_FLUSHES = 2
/** Retries of a read, write or channel while the database or the broker is away. */
const RETRY_BACKOFF = { initialMs: 250, maxMs: 5_000 }
/** On shutdown, outcome writes get this many retries (about 4 s) before the items are left to the next run. */
const RETRIES_WHEN_STOPPING = 4

type InFlight = { seq: number; groupId: string; sourceId: string; channel: ConfirmChannel; at: number }

/** Unwinds a run that must stop publishing: shutdown, or the lease went to another worker. */
class RunStopped extends Error {
  override name = 'RunStopped'
}

/**
 * One claimed job, published in seq order through its own ConfirmChannel:
 *
 * - items are claimed in chunks, the job's claimed_through raised past them by the same statement, before any of them
 *   is published, so after a crash only open items at or below it (in flight) can have reached the broker, and they
 *   are published again with the same x-lazarus-replay-id;
 * - a message counts as replayed only after the broker's ack with no basic.return before it (mandatory publishes,
 *   returns correlated by replay id); a nack, return, closed channel or confirm timeout leaves it dead, with the reason;
 * - unconfirmed publishes are capped by the window, `drain` is honoured, a 'blocked' connection pauses publishing,
 *   and a token bucket holds the job's rate;
 * - outcomes are written in batches (one transaction per batch), never one statement per message.
 */
export class JobRun {
  private channel: ConfirmChannel | null = null
  private readonly unconfirmed = new Map<string, InFlight>()
  /** Channels that closed: amqplib fails their unconfirmed publishes with the same kind of error as a nack. */
  private readonly closedChannels = new WeakSet<ConfirmChannel>()
  private readonly returned = new Map<string, string>()
  private settled: ItemOutcome[] = []
  private readonly flushes = new Set<Promise<void>>()
  private flushTimer: NodeJS.Timeout | null = null
  private readonly waiters = new Set<() => void>()
  private readonly exchanges = new Map<string, boolean>()
  private readonly bucket: TokenBucket
  private readonly window: InFlightWindow
  private readonly meter = new RateMeter()
  private readonly headersSlot = publishHeadersSlot()
  private heartbeat: NodeJS.Timeout | null = null
  private beating = false
  private lastRenewal = Date.now()
  private drainWait = false
  private lastChannelError: string | null = null
  private cancelRequested: boolean
  private honourCancel = true
  private stopping = false
  private leaseLost = false
  private done: Promise<void> | null = null
  private readonly flushSize: number

  constructor(
    private readonly ctx: JobRunContext,
    private readonly job: JobRow,
  ) {
    this.bucket = new TokenBucket(job.rate_per_second)
    this.window = new InFlightWindow(ctx.settings.window)
    this.cancelRequested = job.cancel_requested_at !== null
    this.flushSize = Math.max(1, Math.min(ctx.settings.window, job.rate_per_second, 1000))
  }

  run(): Promise<void> {
    this.done ??= this.execute()
    return this.done
  }

  /** Stops publishing, waits briefly for outstanding confirms, records what is known and gives the lease back. */
  async stop(): Promise<void> {
    this.stopping = true
    this.wake()
    // The run's failure is the executor's to log and count (start() in executor.ts); stop only waits for the end.
    await this.done?.catch(() => {})
  }

  wake(): void {
    for (const waiter of [...this.waiters]) waiter()
  }

  private get log() {
    return this.ctx.log
  }

  private async execute(): Promise<void> {
    const { sql, owner } = this.ctx
    const jobId = this.job.id
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS)
    this.heartbeat.unref?.()
    try {
      if (this.job.run_failures >= MAX_RUN_FAILURES) {
        await this.fail(`gave up after ${this.job.run_failures} failed attempts`)
        return
      }
      await this.publishAll()
      await this.checkpoint()
      if (this.cancelRequested) {
        await sql.transaction((tx) => closeOpenItems(tx, { jobId, actor: this.job.created_by, status: 'cancelled', reason: 'replay cancelled', kinds: ['replay'] }))
      }
      // Releases follow the replayed messages (docs/ARCHITECTURE.md#pause-hold-release), cancelled or not: the pauses
      // end either way.
      this.honourCancel = false
      const appended = await sql.transaction((tx) => appendReleaseItems({ tx, jobId }))
      if (appended > 0) {
        await this.publishAll()
        await this.checkpoint()
      }
      await resumeJobPauses({ sql, jobId, actor: this.job.created_by })
      await this.finish(this.cancelRequested ? 'cancelled' : 'completed')
    } catch (error) {
      if (!(error instanceof RunStopped)) throw error
    } finally {
      if (this.heartbeat) clearInterval(this.heartbeat)
      // writeOutcomes logs its own failures and resolves: a rejection here would be a bug, not an outage.
      await this.flushAll().catch((error: unknown) => this.log.error('replay outcomes not flushed', { job: jobId, error: (error as Error).message }))
      if (this.flushTimer) clearTimeout(this.flushTimer)
      const channel = this.channel
      this.channel = null
      await channel?.close().catch(() => {}) // closed or closing already when the broker went away
      if (this.stopping && !this.leaseLost) await releaseLeaseQuietly(sql, jobId, owner)
    }
  }

  /** Throws RunStopped when the run must end without finishing the job. */
  private async checkpoint(): Promise<void> {
    await this.settleAll()
    if (this.stopping || this.leaseLost) throw new RunStopped()
  }

  private async finish(status: 'completed' | 'cancelled' | 'failed', error: string | null = null): Promise<void> {
    const { sql, owner } = this.ctx
    await sql.transaction(async (tx) => {
      const job = await finishJob(tx, { jobId: this.job.id, owner, status, error })
      if (!job) return
      const replayed = job.confirmed
      const parts = [
        `${replayed} replayed`,
        job.released > 0 ? `${job.released} released` : null,
        job.unroutable > 0 ? `${job.unroutable} unroutable` : null,
        job.failed > 0 ? `${job.failed} failed` : null,
        job.skipped > 0 ? `${job.skipped} could not be replayed` : null,
        job.cancelled > 0 ? `${job.cancelled} cancelled` : null,
      ].filter(Boolean)
      await recordAudit({
        sql: tx,
        actor: job.created_by,
        action: 'replay.finished',
        subject: { type: 'replay', id: job.id },
        summary: `${job.kind === 'release' ? 'Release' : 'Replay'} ${job.id} ${status}: ${parts.join(', ')} of ${job.total}`,
        details: {
          kind: job.kind, total: job.total, published: job.published, confirmed: job.confirmed, released: job.released,
          unroutable: job.unroutable, failed: job.failed, skipped: job.skipped, cancelled: job.cancelled,
          cancelledBy: job.cancel_requested_by, error,
        },
        outcome: status,
      })
    })
    this.log.info('replay job finished', { job: this.job.id, status })
  }

  /** A job that keeps failing: its open items fail (their messages stay dead), its pauses end. */
  private async fail(reason: string): Promise<void> {
    const { sql } = this.ctx
    await sql.transaction((tx) => closeOpenItems(tx, { jobId: this.job.id, actor: this.job.created_by, status: 'failed', reason: `replay failed: ${reason}`, kinds: ['replay', 'release'] }))
    await resumeJobPauses({ sql, jobId: this.job.id, actor: this.job.created_by })
    await this.finish('failed', reason)
  }

  // ---------------------------------------------------------------------------------------------
  // Reading and publishing

  private shouldStopPublishing(): boolean {
    return this.stopping || this.leaseLost || (this.honourCancel && this.cancelRequested)
  }

  /**
   * Publishes every open item in seq order. Each chunk is claimed (claimed_through raised) in one statement, about a second
   * of publishing at the job's rate (at most CHUNK_ITEMS); claims run back to back, up to CLAIMS_AHEAD chunks ahead of
   * the one going out, so a slow claim does not stall publishing.
   */
  private async publishAll(): Promise<void> {
    const limit = Math.min(CHUNK_ITEMS, Math.max(MIN_CHUNK_ITEMS, this.job.rate_per_second))
    const span = limit * 8
    const last = await this.retry('read replay items', () => lastSeq(this.ctx.sql, this.job.id))
    type Claimed = { rows: ItemRow[]; cursor: number }
    const claim = async (after: number): Promise<Claimed> => {
      const rows = await this.retry('read replay items', () => claimItems(this.ctx.sql, { jobId: this.job.id, afterSeq: after, span, limit, maxBytes: CHUNK_BYTES }))
      // An empty span (items a previous run finished) moves the cursor past it.
      return { rows, cursor: rows.length > 0 ? rows[rows.length - 1].seq : after + span }
    }
    const ahead: Promise<Claimed | null>[] = []
    let tail: Promise<Claimed | null> = Promise.resolve({ rows: [], cursor: 0 })
    const refill = () => {
      while (ahead.length < CLAIMS_AHEAD) {
        tail = tail.then((previous) => (previous === null || previous.cursor >= last || this.shouldStopPublishing() ? null : claim(previous.cursor)))
        // Its failure is thrown where `ahead` is awaited; this only keeps a claim nobody awaits (the run stopped) from
        // being an unhandled rejection.
        tail.catch(() => {})
        ahead.push(tail)
      }
    }
    refill()
    for (;;) {
      const claimed = await ahead.shift()!
      if (claimed === null || this.shouldStopPublishing()) break
      refill()
      if (claimed.rows.length > 0) await this.publishChunk(claimed.rows)
      if (this.shouldStopPublishing()) break
    }
    // Chunks claimed but not published stay in flight: a cancel closes them, another run publishes them.
    await Promise.allSettled(ahead)
  }

  private async publishChunk(chunk: ItemRow[]): Promise<void> {
    for (const item of chunk) {
      const exchange = item.exchange ?? ''
      const routingKey = item.routing_key ?? (item.kind === 'release' ? (item.held_from ?? '') : '')
      if (item.row_status !== 'replaying') {
        this.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: `not published: the message is ${item.row_status}, not replaying` })
        continue
      }
      const known = exchange === '' ? true : this.exchanges.get(exchange)
      if (!(known ?? (await this.exchangeExists(exchange)))) {
        this.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'failed', error: `not published: exchange "${exchange}" does not exist` })
        continue
      }
      const build = buildPublish(
        {
          id: item.dead_letter_id, body: asBuffer(item.body), properties: JSON.parse(item.properties_json) ?? {}, headers: JSON.parse(item.headers_json) ?? {},
          lineageOriginId: item.lineage_origin_id, replayCount: item.replay_count,
        },
        item.kind === 'release'
          ? { kind: 'release', replayId: item.replay_id, pauseId: item.pause_id ?? `job-${this.job.id}` }
          : { kind: 'replay', replayId: item.replay_id, actor: this.job.created_by, pauseId: item.pause_id },
        { amqpUser: this.ctx.settings.amqpUser, maxBodyBytes: this.ctx.settings.maxBodyBytes },
      )
      if (!build.ok) {
        this.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: build.message })
        continue
      }
      // Synchronous while there is room; a promise only when publishing has to wait.
      for (let attempt = 1; ; attempt++) {
        if (!this.readyToPublish() && !(await this.waitUntilReady())) return
        const sent = this.publishNow(item, exchange, routingKey, build)
        if (sent) break
        if (attempt === 3) {
          this.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'failed', error: 'not published: the channel kept closing' })
          break
        }
      }
    }
  }

  /** Everything a publish needs now: a channel, no block or drain, a fresh lease, room in the window, a rate token. */
  private readyToPublish(): boolean {
    const { settings } = this.ctx
    if (this.shouldStopPublishing() || !this.channel || this.ctx.broker.blocked !== null || this.drainWait) return false
    if (Date.now() - this.lastRenewal >= settings.leaseMs * 0.75) return false
    if (this.window.closed(this.unconfirmed.size) || this.settled.length >= settings.window * 4) return false
    return this.bucket.take() === 0
  }

  /** Waits until readyToPublish would hold (and has taken the token); false when publishing must stop. */
  private async waitUntilReady(): Promise<boolean> {
    const { settings } = this.ctx
    for (;;) {
      if (this.shouldStopPublishing()) return false
      if (!this.channel) {
        await this.openChannel()
        continue
      }
      const leaseFresh = Date.now() - this.lastRenewal < settings.leaseMs * 0.75
      if (this.ctx.broker.blocked !== null || this.drainWait || !leaseFresh || this.window.closed(this.unconfirmed.size) || this.settled.length >= settings.window * 4) {
        await this.pause(100)
        continue
      }
      const wait = this.bucket.take()
      if (wait > 0) {
        await this.pause(wait)
        continue
      }
      return true
    }
  }

  /** Publishes one message; false when the channel closed before anything was written (publish it again). */
  private publishNow(item: ItemRow, exchange: string, routingKey: string, build: Extract<PublishBuild, { ok: true }>): boolean {
    const channel = this.channel!
    const replayId = item.replay_id
    this.unconfirmed.set(replayId, { seq: item.seq, groupId: item.group_id, sourceId: item.source_id, channel, at: Date.now() })
    build.options.headers = this.headersSlot.load(build.headers)
    try {
      if (!channel.publish(exchange, routingKey, build.content, build.options, (error) => this.onConfirm(replayId, error))) this.drainWait = true
    } catch (error) {
      this.unconfirmed.delete(replayId)
      if (error instanceof IllegalOperationError) {
        // The channel closed under us before anything was written.
        if (this.channel === channel) this.channel = null
        return false
      }
      const reason =
        error instanceof RangeError
          ? `cannot replay: header table too large for AMQP (${error.message})`
          : `cannot replay: ${(error as Error).message.slice(0, 300)}`
      this.settle({ seq: item.seq, groupId: item.group_id, sourceId: item.source_id, status: 'skipped', error: reason })
      return true
    }
    this.meter.add()
    return true
  }

  private onConfirm(replayId: string, error: Error | null): void {
    const pending = this.unconfirmed.get(replayId)
    if (!pending) return
    this.unconfirmed.delete(replayId)
    const returned = this.returned.get(replayId)
    this.returned.delete(replayId)
    if (error) {
      const reason = this.closedChannels.has(pending.channel)
        ? `not confirmed: channel closed${this.lastChannelError ? ` (${this.lastChannelError})` : ''}`
        : 'nacked by the broker'
      this.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'failed', error: reason, publishedAt: pending.at })
    } else if (returned !== undefined) {
      this.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'unroutable', error: returned, publishedAt: pending.at })
    } else {
      this.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'confirmed', error: null, publishedAt: pending.at })
    }
    this.wake()
  }

  private async openChannel(): Promise<void> {
    const channel = await this.retry('open a publishing channel', () => this.ctx.broker.createConfirmChannel({ context: { job: this.job.id } }))
    this.lastChannelError = null
    // Logged by the broker layer; kept for the reason of the publishes the close fails.
    channel.on('error', (error: Error) => (this.lastChannelError = error.message))
    // Ahead of amqplib's own listener, which fails the unconfirmed publishes as it runs.
    channel.prependListener('close', () => this.closedChannels.add(channel))
    channel.on('close', () => {
      if (this.channel === channel) this.channel = null
      // A 404 (exchange deleted) closes the channel: check exchanges again before publishing to them.
      this.exchanges.clear()
      this.drainWait = false
      this.failUnconfirmed(channel, `not confirmed: channel closed${this.lastChannelError ? ` (${this.lastChannelError})` : ''}`)
      this.wake()
    })
    channel.on('return', (message: ConsumeMessage) => {
      const id = message.properties.headers?.['x-lazarus-replay-id']
      if (typeof id === 'string') {
        const { replyCode, replyText, exchange, routingKey } = message.fields as unknown as { replyCode: number; replyText: string; exchange: string; routingKey: string }
        this.returned.set(id, `unroutable: ${replyCode} ${replyText} (exchange "${exchange}", routing key "${routingKey}")`)
      }
    })
    channel.on('drain', () => {
      this.drainWait = false
      this.wake()
    })
    this.channel = channel
  }

  /** Checked once per run on a throw-away channel: publishing to a missing exchange would close the job's channel. */
  private async exchangeExists(name: string): Promise<boolean> {
    if (name === '') return true
    const known = this.exchanges.get(name)
    if (known !== undefined) return known
    const exists = await this.retry(`check exchange "${name}"`, () => this.ctx.broker.exchangeExists(name))
    this.exchanges.set(name, exists)
    return exists
  }

  private failUnconfirmed(channel: ConfirmChannel | null, reason: string): void {
    for (const [replayId, pending] of this.unconfirmed) {
      if (channel !== null && pending.channel !== channel) continue
      this.unconfirmed.delete(replayId)
      this.returned.delete(replayId)
      this.settle({ seq: pending.seq, groupId: pending.groupId, sourceId: pending.sourceId, status: 'failed', error: reason, publishedAt: pending.at })
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Outcomes

  private settle(outcome: ItemOutcome): void {
    this.settled.push(outcome)
    if (this.settled.length >= this.flushSize) this.flush()
    else this.scheduleFlush()
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.settled.length === 0) return
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null
      this.flush()
    }, 100)
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
        if (this.settled.length >= this.flushSize) this.flush()
        else this.scheduleFlush()
        this.wake()
      })
      this.flushes.add(write)
    }
  }

  private async writeOutcomes(outcomes: ItemOutcome[]): Promise<void> {
    try {
      await this.retry(
        'record replay outcomes',
        () => recordOutcomes(this.ctx.sql, { jobId: this.job.id, actor: this.job.created_by, outcomes, rate: this.meter.perSecond() }),
        { evenWhenStopping: true },
      )
    } catch (error) {
      // Not recorded (stopped while the database was away): the items stay in flight and go out again later.
      this.log.warn('replay outcomes not recorded', { job: this.job.id, count: outcomes.length, error: (error as Error).message })
    }
  }

  /** Every settled outcome written, including those settling while earlier batches were being written. */
  private async flushAll(): Promise<void> {
    while (this.settled.length > 0 || this.flushes.size > 0) {
      this.flush()
      await Promise.all(this.flushes)
    }
  }

  /** Waits until every publish has its outcome (or timed out), then writes them all. */
  private async settleAll(): Promise<void> {
    const deadline = Date.now() + STOP_GRACE_MS
    while (this.unconfirmed.size > 0 && !this.leaseLost && !(this.stopping && Date.now() > deadline)) await this.pause(100)
    await this.flushAll()
  }

  // ---------------------------------------------------------------------------------------------
  // Lease, cancel, confirm timeout

  private async beat(): Promise<void> {
    if (this.beating) return
    this.beating = true
    try {
      this.checkConfirmTimeout()
      const { sql, owner, settings } = this.ctx
      const sentAt = Date.now()
      const renew = sentAt - this.lastRenewal >= settings.leaseMs / 3
      const beat = renew
        ? await renewLease(sql, { jobId: this.job.id, owner, leaseMs: settings.leaseMs, rate: this.meter.perSecond() })
        : await pollJob(sql, { jobId: this.job.id, owner })
      if (!beat.mine) {
        if (!this.leaseLost) this.log.warn('replay job lease lost to another worker; stopping', { job: this.job.id })
        this.leaseLost = true
        this.wake()
        return
      }
      if (renew) this.lastRenewal = sentAt
      if (beat.cancel && !this.cancelRequested) {
        this.cancelRequested = true
        this.log.info('replay job cancel requested', { job: this.job.id })
        this.wake()
      }
    } catch (error) {
      this.log.warn('replay heartbeat failed', { job: this.job.id, error: (error as Error).message })
    } finally {
      this.beating = false
    }
  }

  private checkConfirmTimeout(): void {
    const oldest = this.unconfirmed.values().next().value as InFlight | undefined
    const timeout = this.ctx.settings.confirmTimeoutMs
    if (!oldest || Date.now() - oldest.at < timeout) return
    this.log.warn('replay confirm timeout; closing the channel', { job: this.job.id, unconfirmed: this.unconfirmed.size, blocked: this.ctx.broker.blocked })
    const channel = this.channel
    this.channel = null
    this.failUnconfirmed(null, `not confirmed: no answer from the broker within ${timeout} ms${this.ctx.broker.blocked ? ` (publishing blocked: ${this.ctx.broker.blocked})` : ''}`)
    void channel?.close().catch(() => {}) // given up on already (logged above); a failed close leaves nothing open
    this.wake()
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  /** Resolves after `ms` or as soon as anything happens (a confirm, drain, cancel, stop). */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.waiters.add(done)
    })
  }

  /**
   * Retries `fn` with backoff (broker or database away), showing the problem on the job, until it works or the run
   * must stop.
   */
  private async retry<T>(what: string, fn: () => Promise<T>, options: { evenWhenStopping?: boolean } = {}): Promise<T> {
    const backoff = new Backoff(RETRY_BACKOFF)
    let reported = false
    for (;;) {
      try {
        const value = await fn()
        if (reported) await setJobError(this.ctx.sql, { jobId: this.job.id, owner: this.ctx.owner, error: null }).catch((e: unknown) => this.log.warn('cannot clear the job\'s error', { job: this.job.id, error: (e as Error).message }))
        return value
      } catch (error) {
        if (this.leaseLost || (this.stopping && (!options.evenWhenStopping || backoff.attempt >= RETRIES_WHEN_STOPPING))) throw new RunStopped((error as Error).message)
        const delay = backoff.next()
        const message = `cannot ${what}: ${(error as Error).message}`
        this.log.warn(message, { job: this.job.id, retryInMs: delay })
        if (!reported) {
          reported = true
          await setJobError(this.ctx.sql, { jobId: this.job.id, owner: this.ctx.owner, error: message.slice(0, 1000) }).catch((e: unknown) => this.log.warn('cannot record the job\'s error', { job: this.job.id, jobError: message, error: (e as Error).message }))
        }
        await this.pause(delay)
      }
    }
  }
}

// Quietly: a lease not given back expires by itself (LAZARUS_REPLAY_LEASE_MS) and another run takes the job then.
async function releaseLeaseQuietly(sql: Sql, jobId: string, owner: string): Promise<void> {
  await sql
    .query('UPDATE replay_jobs SET lease_owner = NULL, lease_expires_at = NULL, current_rate = NULL, updated_at = now() WHERE id = $1::bigint AND lease_owner = $2', [jobId, owner])
    .catch(() => {})
}

/** node-pg gives bytea as a Buffer, PGlite as a Uint8Array; amqplib publishes Buffers only. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
