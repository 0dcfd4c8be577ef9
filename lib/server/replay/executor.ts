import 'server-only'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { connect, type ChannelModel } from '@/lib/server/amqp/amqplib'
import type { Sql } from '@/lib/server/db/sql'
import { isConnectionError } from '@/lib/server/db/sql'
import { logger } from '@/lib/server/log'
import { claimJob, releaseLease, type JobRow } from './job-store'
import { JobRun } from './job-run'
import { replaySettings, type ReplaySettings } from './replay-settings'
import { onReplayWork } from './replay-signal'

const log = logger('replay')

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
 * The executor's own broker connection (never the drainer's: a publisher blocked by a resource alarm must not stall
 * draining, docs/rabbitmq.md#connections-and-channels). Connects on demand, forgets a closed connection, and reports
 * 'blocked'.
 */
export class BrokerLink {
  private model: ChannelModel | null = null
  private connecting: Promise<ChannelModel> | null = null
  blocked: string | null = null
  error: string | null = null
  private closed = false

  constructor(
    private readonly url: string,
    private readonly name: string,
    private readonly onChange: () => void,
  ) {}

  async get(): Promise<ChannelModel> {
    if (this.closed) throw new Error('executor stopped')
    if (this.model) return this.model
    this.connecting ??= (async () => {
      try {
        const model = await connect(this.url, { clientProperties: { connection_name: this.name } })
        model.on('error', (error: Error) => log.warn('replay connection error', { error: error.message }))
        model.on('close', () => {
          if (this.model === model) this.model = null
          this.blocked = null
          this.onChange()
        })
        model.on('blocked', (reason: string) => {
          this.blocked = reason || 'blocked'
          log.warn('broker blocks publishing', { reason })
          this.onChange()
        })
        model.on('unblocked', () => {
          this.blocked = null
          log.info('broker unblocked publishing')
          this.onChange()
        })
        if (this.closed) {
          await model.close().catch(() => {}) // stopping: the connection is not wanted, closed or not
          throw new Error('executor stopped')
        }
        this.model = model
        this.error = null
        return model
      } catch (error) {
        this.error = (error as Error).message
        throw error
      } finally {
        this.connecting = null
      }
    })()
    return this.connecting
  }

  async close(): Promise<void> {
    this.closed = true
    // A connect that failed was logged where it was awaited and left nothing to close; a failed close at shutdown
    // leaves nothing open.
    const model = this.model ?? (await this.connecting?.catch(() => null))
    this.model = null
    await model?.close().catch(() => {})
  }
}

/**
 * Runs replay jobs from PostgreSQL. Any number of executors (one per web or worker process) share the work: each
 * claims a job with a lease it renews while publishing; a job whose lease expired (its worker crashed) is taken over
 * by the next executor that looks. Started by lib/server/runtime/background.ts next to the drainer.
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

  const link = new BrokerLink(settings.amqpUrl, options.connectionName ?? 'lazarus-replay', () => {
    for (const run of runs.values()) run.wake()
  })

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
    const run = new JobRun({ sql, settings, owner, link, log }, job)
    runs.set(job.id, run)
    void run
      .run()
      .then(
        () => backoff.delete(job.id),
        async (error: unknown) => {
          const message = (error as Error).message ?? String(error)
          const transient = isConnectionError(error) || link.error !== null
          log.warn('replay job run failed; will retry', { job: job.id, error: message })
          backoff.set(job.id, Date.now() + Math.min(30_000, 1_000 * 2 ** Math.min(5, job.run_failures)))
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
      blocked: link.blocked,
      brokerError: link.error,
    }),
    wake: () => void tick(),
    async stop() {
      if (stopped) return
      stopped = true
      unsubscribe()
      if (timer) clearTimeout(timer)
      await ticking?.catch(() => {}) // a tick logs what fails inside it; stop only waits for one in progress to end
      await Promise.all([...runs.values()].map((run) => run.stop()))
      await link.close()
    },
  }
}
