import 'server-only'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { backoffDelay } from '@/lib/server/platform/broker/backoff'
import { BrokerConnection } from '@/lib/server/platform/broker/connection'
import { NatsLink } from '@/lib/server/platform/broker/nats-link'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import { isConnectionError } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import type { Signal } from '@/lib/server/platform/signal'
import { replaySettings, type ReplaySettings } from '@/lib/server/replay/replay-settings'
import { claimJob, releaseLease, type JobRow } from './job-store'
import { JobRun } from './job-run'
import { startWaitingJobs } from './start-job'
import { haltSweeper } from './stage-control'

/**
 * The replay executor, and why a crash loses or doubles nothing (docs/ARCHITECTURE.md#where-crash-safety-comes-from).
 * Its SQL is in job-store.ts; a run's parts are job-run.ts (claims chunks, hands them on), publisher.ts,
 * outcome-writer.ts and lease-keeper.ts.
 *
 * 1. Claiming a job (claimJob) takes its lease in one committed statement. A process that dies holding it simply stops
 *    renewing; once the lease expires the next executor that looks claims the job and starts from its open items.
 * 2. Claiming a chunk (claimItems) raises the job's claimed_through in the statement that reads the chunk, committed
 *    durably before any item of it is published. Dying before that commit: nothing claimed, nothing published. After
 *    it: the chunk's open items count as in flight, and the next run publishes them again, each with its own
 *    x-lazarus-replay-id. Items above claimed_through were never published.
 * 3. Publishing, then the broker's confirm. A message counts as replayed only after an ack with no basic.return
 *    before it. Dying between the publish and the outcome's write is the one way a message goes out twice, and the
 *    copy carries the same x-lazarus-replay-id, so consumers can recognise it.
 * 4. Writing outcomes (recordOutcomes): one transaction per batch, committed without waiting for the WAL flush. A
 *    batch lost with the process or the database leaves its items in flight: published again, as in 3. While the
 *    database is away, batches are retried and publishing waits once four windows of outcomes are waiting.
 * 5. The broker going away closes the channel: the publishes it had not confirmed fail ("not confirmed: channel
 *    closed"), so their messages stay dead, with the reason, and can be replayed again; the run opens a new channel
 *    and goes on. Under a resource alarm ('blocked') publishing waits; past the confirm timeout the channel is closed.
 * 6. The lease: publishing stops once the last renewal is older than three quarters of the lease, before another
 *    executor may take the job over; a run that finds the job taken by another stops at once.
 * 7. Finishing: releases appended and published, pauses resumed, then the job finished with its audit entry in one
 *    transaction. Dying before that: the next run finds no open replay items, publishes what releases remain, resumes
 *    the pauses (again, harmlessly) and finishes the job.
 * 8. Shutdown (stop()): each run stops publishing, waits up to 5 s for its confirms, writes its outcomes and gives the
 *    lease back, so the job is taken over at once rather than after the lease expires. Killed instead: as in 1 to 4.
 * 9. A run that fails for another reason than an outage gives the lease back with run_failures + 1 and is retried with
 *    backoff; after five such runs the job fails, its open items fail (their messages stay dead) and its pauses end.
 */

const log = logger('replay')

/** A job whose run failed here is not claimed again by this executor for 1, 2, 4 … up to 30 seconds. */
const RUN_BACKOFF = { initialMs: 1_000, maxMs: 30_000, jitter: 0 }

export type ReplayExecutorStatus = {
  state: 'idle' | 'running' | 'stopped'
  owner: string
  jobs: string[]
  /** Why RabbitMQ blocks publishing (a resource alarm), while it does. */
  blocked: string | null
  brokerError: string | null
}

export type ReplayExecutor = { readonly owner: string; status(): ReplayExecutorStatus; wake(): void; stop(): Promise<void> }

export type StartReplayExecutorOptions = {
  /** The executor uses db.background, the pool without statement timeouts. */
  db: Db
  /** Where the pause and resume events of starting jobs and ending releases go (the composition root's publisher of lazarus.control). */
  control: ExchangePublisher
  /** Wakes the executor when this process's API created, approved, resumed or cancelled a job (the composition root's). */
  work: Signal
  settings?: ReplaySettings
  /** Lease owner name; unique per process by default. */
  owner?: string
  connectionName?: string
}

/**
 * Runs replay jobs from PostgreSQL. Any number of executors (one per web or worker process) share the work: each
 * claims a job with a lease it renews while publishing; a job whose lease expired (its worker crashed) is taken over
 * by the next executor that looks. Started by lib/server/platform/runtime/background.ts next to the drainer.
 */
export function startReplayExecutor(options: StartReplayExecutorOptions): ReplayExecutor {
  const sql = options.db.background
  const settings = options.settings ?? replaySettings()
  const owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  const runs = new Map<string, JobRun>()
  /** Jobs whose last run failed here: not claimed again before the time given. */
  const backoff = new Map<string, number>()
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let ticking: Promise<void> | null = null
  let again = false
  // Halted jobs nobody resumed or cancelled within LAZARUS_REPLAY_HALT_TIMEOUT_MIN are cancelled (stage-control.ts).
  const sweepHalts = haltSweeper({ sql, timeoutMs: settings.haltTimeoutMs, log })

  // The executor's own connection, never the drainer's: RabbitMQ blocks a publishing connection under a resource
  // alarm, and draining must go on meanwhile. Opened by the first job's first channel.
  const broker = new BrokerConnection({ url: settings.amqpUrl, name: options.connectionName ?? 'lazarus-replay' })
  const wakeRuns = () => {
    for (const run of runs.values()) run.wake()
  }
  const unwatch = (['connect', 'disconnect', 'blocked', 'unblocked'] as const).map((event) => broker.on(event, wakeRuns))
  // JetStream replays' connection (docs/jetstream.md#replay), opened by the first JetStream item.
  const nats = settings.nats ? new NatsLink(settings.nats, options.connectionName ?? 'lazarus-replay') : null

  const schedule = (ms: number) => {
    if (stopped) return
    if (timer) clearTimeout(timer)
    timer = setTimeout(() => void tick(), ms)
    timer.unref?.()
  }

  async function tick(): Promise<void> {
    if (ticking) {
      again = true
      return ticking
    }
    ticking = (async () => {
      do {
        again = false
        // Scheduled and approved jobs whose time has come become pending here (start-job.ts), before the claims.
        await startWaitingJobs({ db: options.db, control: options.control, settings, log }).catch((error: unknown) => log.warn('cannot start waiting replay jobs', { error: (error as Error).message }))
        if (!stopped) await sweepHalts()
        while (!stopped && runs.size < settings.concurrency) {
          const now = Date.now()
          for (const [id, until] of backoff) if (until <= now) backoff.delete(id)
          let job: JobRow | null
          try {
            job = await claimJob({ sql, owner, leaseMs: settings.leaseMs, skip: [...runs.keys(), ...backoff.keys()] })
          } catch (error) {
            log.warn('cannot look for replay jobs', { error: (error as Error).message })
            break
          }
          if (!job) break
          start(job)
        }
      } while (again && !stopped)
    })().finally(() => {
      ticking = null
      schedule(settings.pollMs)
    })
    return ticking
  }

  function start(job: JobRow): void {
    log.info('replay job claimed', { job: job.id, kind: job.kind })
    const run = new JobRun({ db: options.db, control: options.control, settings, owner, broker, nats, log }, job)
    runs.set(job.id, run)
    void run
      .run()
      .then(
        () => backoff.delete(job.id),
        async (error: unknown) => {
          const message = (error as Error).message ?? String(error)
          const transient = isConnectionError(error) || broker.status().error !== null
          log.warn('replay job run failed; will retry', { job: job.id, error: message })
          backoff.set(job.id, Date.now() + backoffDelay(RUN_BACKOFF, job.run_failures + 1))
          await releaseLease({ sql, jobId: job.id, owner, error: message.slice(0, 1000), failed: !transient }).catch((e: unknown) =>
            log.warn('cannot release the replay job\'s lease; it expires by itself', { job: job.id, error: (e as Error).message }),
          )
        },
      )
      .finally(() => {
        runs.delete(job.id)
        if (!stopped) void tick()
      })
  }

  const unsubscribe = options.work.listen(() => void tick())
  void tick()

  return {
    owner,
    status: () => ({
      state: stopped ? 'stopped' : runs.size > 0 ? 'running' : 'idle',
      owner,
      jobs: [...runs.keys()],
      blocked: broker.blocked,
      brokerError: broker.status().error,
    }),
    wake: () => void tick(),
    async stop() {
      if (stopped) return
      stopped = true
      unsubscribe()
      if (timer) clearTimeout(timer)
      await ticking?.catch(() => {}) // a tick logs what fails inside it; stop only waits for one in progress to end
      await Promise.all([...runs.values()].map((run) => run.stop()))
      for (const off of unwatch) off()
      await Promise.all([broker.close(), nats?.close()])
    },
  }
}
