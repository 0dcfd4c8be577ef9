import 'server-only'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import { publishControlEvents } from '@/lib/server/pauses/control-events'
import { describePause } from '@/lib/server/pauses/pause-audit'
import { markResumed } from '@/lib/server/pauses/insert-pause'
import { toControlEvents } from '@/lib/server/pauses/pause-row'
import { insertReleaseItems } from '@/lib/server/pauses/release-items'
import { claimHeldUnderJobPauses, jobCreator, lockOpenJobPauses, markJobPausesReleasing } from './release-store'
import { releaseStragglers } from './release-stragglers'

/**
 * How a replay job's pauses end (docs/ARCHITECTURE.md#pause-hold-release, "Order"): once its replayed messages are out,
 * the replay executor appends the messages held under its pauses and publishes them, then resumes the pauses.
 */

export type AppendReleaseItemsOptions = { sql: Sql; jobId: string }

/**
 * Appends, after the job's last item, release items for the messages held under the job's pauses, in arrival
 * order (dead_letters id order), and marks those pauses 'releasing'. Call in a transaction once the replay items are
 * final; it can be called again to pick up messages held meanwhile. Returns how many items were added.
 */
export async function appendReleaseItems({ sql, jobId }: AppendReleaseItemsOptions): Promise<number> {
  if ((await markJobPausesReleasing({ sql, jobId })) === 0) return 0
  const held = await claimHeldUnderJobPauses({ sql, jobId, actor: await jobCreator({ sql, jobId }) })
  return insertReleaseItems({ sql, jobId, rows: held })
}

/** `control`: where the 'resume' events go (the composition root's publisher of lazarus.control). */
export type ResumeJobPausesOptions = { db: Db; control: ExchangePublisher; jobId: string; actor: string }

/**
 * Resumes every pause of a job (each at its own registry version, audited) and publishes the 'resume' events.
 * Messages a guard held in the moment before the event reached it are released by the straggler sweep, which
 * runs once right here and then periodically.
 */
export async function resumeJobPauses({ db, control, jobId, actor }: ResumeJobPausesOptions): Promise<void> {
  const resumed = await db.background.transaction(async (tx) => {
    const ids = await lockOpenJobPauses({ sql: tx, jobId })
    return markResumed({ sql: tx, ids, actor, summary: (p) => `Resumed ${describePause(p)} after job ${jobId}` })
  })
  await publishControlEvents({ control, events: toControlEvents('resume', resumed) })
  if (resumed.length > 0) {
    await releaseStragglers({ db }).catch((error: unknown) =>
      logger('pauses').warn('cannot release held stragglers now; the periodic sweep will', { job: jobId, error: (error as Error).message }),
    )
  }
}
