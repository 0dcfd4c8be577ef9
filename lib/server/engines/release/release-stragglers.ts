import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { createReleaseJob } from '@/lib/server/pauses/release-items'
import { claimStragglers } from './release-store'

/**
 * A release that failed (its queue was deleted, say) leaves the message held with the reason; it is tried again
 * after this long rather than every sweep.
 */
const FAILED_RELEASE_RETRY_SECONDS = 600

/** The audit actor for what Lazarus does by itself. */
export const SYSTEM_ACTOR = 'lazarus'

/**
 * The straggler sweep (docs/ARCHITECTURE.md#pause-hold-release, "Stragglers"): a message a guard held after its pause
 * ended (the resume event had not reached it yet, or it never heard of the resume) has no pause left to release it.
 * Every held row whose (queue, entity) no open pause covers goes back to its queue in a small release job, unless it
 * is flagged held-unexpected (no pause explained it when it arrived: claimHeldRows never takes those). Concurrent
 * sweeps (several workers) skip each other's rows. Returns the job id, or null when there was nothing to release.
 */
export async function releaseStragglers({ db, actor = SYSTEM_ACTOR }: { db: Db; actor?: string }): Promise<{ jobId: string; released: number } | null> {
  return db.background.transaction(async (tx) => {
    const rows = await claimStragglers({ sql: tx, actor, retryAfterSeconds: FAILED_RELEASE_RETRY_SECONDS, limit: 10_000 })
    const jobId = await createReleaseJob({ sql: tx, rows, actor })
    if (jobId === null) return null
    await recordAudit({
      sql: tx,
      actor,
      action: 'replay.created',
      subject: { type: 'replay', id: jobId },
      summary: `Releasing ${rows.length} message${rows.length === 1 ? '' : 's'} held after their pause was resumed`,
      details: { kind: 'release', messages: rows.length, queues: [...new Set(rows.map((r) => r.held_from))] },
      outcome: 'pending',
    })
    return { jobId, released: rows.length }
  })
}
