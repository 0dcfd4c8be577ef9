import 'server-only'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { backoffDelay } from '@/lib/server/platform/broker/backoff'
import { BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Sql } from '@/lib/server/platform/db/sql'
import { isConnectionError } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import { claimJob, releaseLease, type JobRow } from './job-store'
import { JobRun } from './job-run'
import { replaySettings, type ReplaySettings } from '@/lib/server/replay/replay-settings'
import { onReplayWork } from './replay-signal'

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
  sql: Sql
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
  const { sql } = options
  const settings = options.settings ?? replaySettings()
  const owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  const runs = new Map<string, JobRun>()
  /** Jobs whose last run failed here: not claimed again before the time given. */
  const backoff = new Map<string, number>()
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let ticking: Promise<void> | null = null
  let again = false

  // The executor's own connection, never the drainer's: RabbitMQ blocks a publishing connection under a resource
  // alarm, and draining must go on meanwhile. Opened by the first job's first channel.
  const broker = new BrokerConnection({ url: settings.amqpUrl, name: options.connectionName ?? 'lazarus-replay' })
  const wakeRuns = () => {
    for (const run of runs.values()) run.wake()
  }
  const unwatch = (['connect', 'disconnect', 'blocked', 'unblocked'] as const).map((event) => broker.on(event, wakeRuns))

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
        while (!stopped && runs.size < settings.concurrency) {
          const now = Date.now()
          for (const [id, until] of backoff) if (until <= now) backoff.delete(id)
          let job: JobRow | null
          try {
            job = await claimJob(sql, { owner, leaseMs: settings.leaseMs, skip: [...runs.keys(), ...backoff.keys()] })
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
    const run = new JobRun({ sql, settings, owner, broker, log }, job)
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
          await releaseLease(sql, { jobId: job.id, owner, error: message.slice(0, 1000), failed: !transient }).catch((e: unknown) =>
            log.warn('cannot release the replay job\'s lease; it expires by itself', { job: job.id, error: (e as Error).message }),
          )
        },
      )
      .finally(() => {
        runs.delete(job.id)
        if (!stopped) void tick()
      })
  }

  const unsubscribe = onReplayWork(() => void tick())
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
      await broker.close()
    },
  }
}
