import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Logger } from '@/lib/server/platform/log'
import { startTimedLoop, type TimedLoop } from '@/lib/server/platform/timed-loop'
import { backfillGroupFrames } from './group-frames-store'

/**
 * Fills the top frames of groups created before they were stored (docs/ARCHITECTURE.md#groups-and-counters), a few groups
 * per transaction, until group_frames_backlog is empty; after that each round is one empty read. Why a crash loses
 * nothing: taking groups off the backlog and writing their frames commit together (group-frames-store.ts), so a group
 * is either still listed or done; groups are taken FOR UPDATE SKIP LOCKED, so processes never take the same one; and
 * the update only fills an empty array, so doing one twice writes the same frames once.
 */
export function startGroupFramesBackfill({ db, log, everyMs = 60_000 }: { db: Db; log: Logger; everyMs?: number }): TimedLoop {
  let total = 0
  return startTimedLoop({
    firstAfterMs: 5_000,
    everyMs,
    onError: (error) => log.warn('group frames backfill failed; will retry', { error: error.message }),
    round: async (stopping) => {
      for (;;) {
        const result = await backfillGroupFrames({ sql: db.background })
        total += result.groups
        if (!result.more || stopping()) break
      }
      if (total > 0) log.info('group frames backfilled', { groups: total })
      total = 0
    },
  })
}
