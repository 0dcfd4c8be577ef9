import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'
import { closeRetentionRun, deleteExpiredBatch, openRetentionRun } from './retention-store'

export type RunRetentionOptions = {
  /** Retention uses db.background, the pool without statement timeouts. */
  db: Db
  /** Replayed and resolved messages whose status changed more than this many days ago go. */
  days: number
  /** Rows per transaction: small, so no lock is held for long and the drainer never waits behind retention. */
  batchSize?: number
  /** Stop after this many batches (the next run continues). */
  maxBatches?: number
  now?: Date
}

export type RetentionResult = { cutoff: Date; deleted: number; batches: number; more: boolean }

/**
 * Deletes replayed and resolved messages older than the retention period, in batches, and keeps each group's
 * counters (and its counters per source) equal to what is stored. Arrival buckets stay (they are history, and alerts and sparklines read them);
 * sources' drained counts stay (they are Prometheus counters and must never go down).
 */
export async function runRetention({ db, days, batchSize = 1000, maxBatches = Number.POSITIVE_INFINITY, now = new Date() }: RunRetentionOptions): Promise<RetentionResult> {
  const sql = db.background
  const cutoff = new Date(now.getTime() - days * 86_400_000)
  let deleted = 0
  let batches = 0
  let more = days > 0
  const runId = await openRetentionRun({ sql, cutoff })
  try {
    while (more && batches < maxBatches) {
      const removed = await deleteExpiredBatch({ sql, cutoff, batchSize })
      deleted += removed
      batches++
      more = removed === batchSize
    }
    await closeRetentionRun({ sql, runId, deleted })
  } catch (error) {
    // The run's own error is thrown on (the retention loop logs it); not being able to record it is worth a line too.
    await closeRetentionRun({ sql, runId, deleted, error: (error as Error).message }).catch((e: unknown) =>
      logger('retention').warn('cannot record the failed run in retention_runs', { run: runId, error: (e as Error).message }),
    )
    throw error
  }
  return { cutoff, deleted, batches, more }
}
