import 'server-only'
import { Backoff } from '@/lib/server/platform/broker/backoff'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { setJobError } from './job-store'

/** Retries of a read, write or channel while the database or the broker is away. */
const RETRY_BACKOFF = { initialMs: 250, maxMs: 5_000 }
/** On shutdown, writes that retry when stopping get this many retries (about 4 s) before the run gives up on them. */
const RETRIES_WHEN_STOPPING = 4

/** Unwinds a run that must stop publishing: shutdown, or the lease went to another worker. */
export class RunStopped extends Error {
  override name = 'RunStopped'
}

export type RunControlOptions = { sql: Sql; jobId: string; owner: string; log: Logger; cancelRequested: boolean }

/**
 * What every part of one job run consults: whether it must stop (shutdown, lost lease, cancel), a wait that anything
 * happening cuts short, and retrying with backoff while the broker or the database is away.
 */
export class RunControl {
  /** Shutdown: stop publishing, record what is known, give the lease back. */
  stopping = false
  /** Another worker holds the job now: stop at once. */
  leaseLost = false
  cancelRequested: boolean
  /** A staged job halted by its re-failures (stage-control.ts): stop publishing, write what is owed, give the job back. */
  halted = false
  /** Cleared once the replay items are done: a cancelled job's release items still go out (its pauses end either way). */
  honourCancel = true
  private readonly waiters = new Set<() => void>()

  constructor(private readonly options: RunControlOptions) {
    this.cancelRequested = options.cancelRequested
  }

  mustStopPublishing(): boolean {
    return this.stopping || this.leaseLost || this.halted || (this.honourCancel && this.cancelRequested)
  }

  /** Whether the run must end without finishing the job. */
  mustEnd(): boolean {
    return this.stopping || this.leaseLost
  }

  /** Ends every pause() now: something happened (a confirm, drain, cancel, stop, a broker event). */
  wake(): void {
    for (const waiter of [...this.waiters]) waiter()
  }

  /** Resolves after `ms` or as soon as anything happens (wake()). */
  pause(ms: number): Promise<void> {
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
   * must stop (then throws RunStopped). `evenWhenStopping` keeps retrying for a few seconds after a shutdown began.
   */
  async retry<T>(what: string, fn: () => Promise<T>, options: { evenWhenStopping?: boolean } = {}): Promise<T> {
    const { sql, jobId, owner, log } = this.options
    const backoff = new Backoff(RETRY_BACKOFF)
    let reported = false
    for (;;) {
      try {
        const value = await fn()
        if (reported) await setJobError({ sql, jobId, owner, error: null }).catch((e: unknown) => log.warn('cannot clear the job\'s error', { job: jobId, error: (e as Error).message }))
        return value
      } catch (error) {
        if (this.leaseLost || (this.stopping && (!options.evenWhenStopping || backoff.attempt >= RETRIES_WHEN_STOPPING))) throw new RunStopped((error as Error).message)
        const delay = backoff.next()
        const message = `cannot ${what}: ${(error as Error).message}`
        log.warn(message, { job: jobId, retryInMs: delay })
        if (!reported) {
          reported = true
          await setJobError({ sql, jobId, owner, error: message.slice(0, 1000) }).catch((e: unknown) => log.warn('cannot record the job\'s error', { job: jobId, jobError: message, error: (e as Error).message }))
        }
        await this.pause(delay)
      }
    }
  }
}
