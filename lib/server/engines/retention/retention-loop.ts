import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { startTimedLoop, type TimedLoop } from '@/lib/server/platform/timed-loop'
import { runRetention } from './run-retention'

/**
 * The retention engine (docs/ARCHITECTURE.md#retention): this loop, one run (run-retention.ts) and its SQL
 * (retention-store.ts). Why a crash loses or doubles nothing (docs/ARCHITECTURE.md#where-crash-safety-comes-from):
 *
 * 1. A batch deletes messages with their status and search rows and lowers their groups' counters in one
 *    transaction: dying, or the database going away, before the commit deletes nothing and lowers nothing; after it,
 *    both are done. Counters never drift from what is stored.
 * 2. Rows are taken FOR UPDATE SKIP LOCKED, so workers running retention at once delete each row once, and group rows
 *    are locked in id order, as ingestion locks them, so the two never deadlock.
 * 3. A run that dies leaves its retention_runs row unfinished; the next run (an hour later, or a minute after the
 *    next start) takes up what is still eligible. Only replayed and resolved messages are ever deleted.
 * 4. A failed run is logged, recorded in retention_runs when the database lets it, and tried again at the next hour.
 */

export type RetentionLoop = TimedLoop

export type StartRetentionLoopOptions = {
  /** Retention uses db.background, the pool without statement timeouts. */
  db: Db
  log: Logger
  /** LAZARUS_RETENTION_DAYS; 0 keeps everything (the loop never runs). */
  days: number
  everyMs?: number
  firstAfterMs?: number
}

/** Runs retention shortly after start-up and then every `everyMs`, resting between batches so it stays in the background. */
export function startRetentionLoop({ db, log, days, everyMs = 3_600_000, firstAfterMs = 60_000 }: StartRetentionLoopOptions): RetentionLoop {
  if (days <= 0) return { stop: async () => {} }
  return startTimedLoop({
    firstAfterMs,
    everyMs,
    round: async (stopping) => {
      let more = true
      while (more && !stopping()) {
        const result = await runRetention({ db, days, maxBatches: 20 })
        if (result.deleted > 0) log.info('retention deleted replayed and resolved messages', { deleted: result.deleted, before: result.cutoff.toISOString() })
        more = result.more
        if (more) await new Promise((resolve) => setTimeout(resolve, 1_000))
      }
    },
    onError: (error) => log.warn('retention failed; will retry', { error: error.message }),
  })
}
