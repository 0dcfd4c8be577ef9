import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { Logger } from '@/lib/server/platform/log'
import { pollJob, releaseLease, renewLease } from './job-store'
import type { RunControl } from './run-control'
import type { RateMeter } from './token-bucket'

const HEARTBEAT_MS = 200

export type LeaseKeeperOptions = {
  sql: Sql
  jobId: string
  owner: string
  /** LAZARUS_REPLAY_LEASE_MS */
  leaseMs: number
  control: RunControl
  /** The rate shown on the job, sent with each renewal. */
  meter: RateMeter
  /** Runs first on every heartbeat (the publisher's confirm timeout). */
  onBeat: () => void
  log: Logger
}

/**
 * Holds a run's lease (docs/ARCHITECTURE.md#lease-and-takeover): a 200 ms heartbeat renews it every third of the
 * lease and otherwise only reads the job, noticing a cancel request and a lease another worker took over (the run
 * stops). Publishing waits while the last renewal is older than three quarters of the lease, so a run that cannot
 * reach the database stops publishing before its lease can run out and the job go to another worker.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | null = null
  private beating = false
  private lastRenewal = Date.now()

  constructor(private readonly options: LeaseKeeperOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_MS)
    this.timer.unref?.()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
  }

  /** Whether the lease was renewed recently enough to go on publishing. */
  fresh(now = Date.now()): boolean {
    return now - this.lastRenewal < this.options.leaseMs * 0.75
  }

  /** Lets the next executor take the job at once (on shutdown) rather than after the lease expires. */
  async giveBack(): Promise<void> {
    const { sql, jobId, owner, log } = this.options
    // Not given back, the lease expires by itself (LAZARUS_REPLAY_LEASE_MS) and another run takes the job then.
    await releaseLease({ sql, jobId, owner }).catch((error: unknown) => log.warn('cannot release the replay job\'s lease; it expires by itself', { job: jobId, error: (error as Error).message }))
  }

  private async beat(): Promise<void> {
    if (this.beating) return
    this.beating = true
    const { sql, jobId, owner, leaseMs, control, meter, log } = this.options
    try {
      this.options.onBeat()
      const sentAt = Date.now()
      const renew = sentAt - this.lastRenewal >= leaseMs / 3
      const beat = renew ? await renewLease({ sql, jobId, owner, leaseMs, rate: meter.perSecond() }) : await pollJob({ sql, jobId, owner })
      if (!beat.mine) {
        if (!control.leaseLost) log.warn('replay job lease lost to another worker; stopping', { job: jobId })
        control.leaseLost = true
        control.wake()
        return
      }
      if (renew) this.lastRenewal = sentAt
      if (beat.cancel && !control.cancelRequested) {
        control.cancelRequested = true
        log.info('replay job cancel requested', { job: jobId })
        control.wake()
      }
    } catch (error) {
      log.warn('replay heartbeat failed', { job: jobId, error: (error as Error).message })
    } finally {
      this.beating = false
    }
  }
}
