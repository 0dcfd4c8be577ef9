import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import { ruleOf } from './create-pause'
import { describePause } from './pause-audit'
import { findOpenPauses, insertPauses } from './insert-pause'

/**
 * What replay creation calls (docs/ARCHITECTURE.md#pause-hold-release). How a job's pauses end (its releases, the
 * resume) is the release engine's: lib/server/engines/release/job-releases.ts.
 */
export { publishControlEvents } from './control-events'
export { toControlEvents } from './pause-row'

/** entityKeyRule: the source's stored rule as it is (validated here; without one, guards read x-entity-key). */
export type JobPausePair = { sourceId: string | null; vhost: string; queue: string; entityKey: string | null; entityKeyRule: unknown }

export type CreateJobPausesOptions = { tx: Sql; jobId: string; actor: string; pairs: JobPausePair[] }

/**
 * Pauses the (queue, entity) pairs a replay job touches, inside the job's creating transaction. A pair already
 * covered by an operator's pause (of the entity or of the whole queue) is left to it: its held messages follow
 * when the operator resumes it, which is after this job's replays anyway. A pair paused by another replay job
 * that has not ended is a conflict: two replays of one order-sensitive entity must not interleave.
 * The caller publishes `toControlEvents('pause', result)` after commit.
 */
export async function createJobPauses({ tx, jobId, actor, pairs }: CreateJobPausesOptions): Promise<PauseDto[]> {
  const unique = new Map<string, JobPausePair>()
  for (const pair of pairs) unique.set(`${pair.vhost}\u0000${pair.queue}\u0000${pair.entityKey ?? '\u0001'}`, pair)
  const wanted = [...unique.values()].sort(
    (a, b) => a.vhost.localeCompare(b.vhost) || a.queue.localeCompare(b.queue) || (a.entityKey ?? '').localeCompare(b.entityKey ?? ''),
  )
  // Each pair is covered by a pause of its own key or by a whole-queue pause of its queue.
  const open = await findOpenPauses({ sql: tx, keys: wanted.flatMap((p) => (p.entityKey === null ? [p] : [p, { ...p, entityKey: null }])) })
  const toCreate = []
  for (const pair of wanted) {
    const covering = open.filter((o) => o.vhost === pair.vhost && o.queue === pair.queue && (o.entityKey === pair.entityKey || o.entityKey === null))
    const foreign = covering.find((o) => o.replayJobId !== null && o.replayJobId !== jobId)
    if (foreign) {
      throw new AppError('conflict', `${describePause(foreign)} is paused by replay job ${foreign.replayJobId}, which has not ended; wait for it or cancel it`, {
        pauseId: foreign.id,
        replayJobId: foreign.replayJobId,
      })
    }
    if (covering.length > 0) continue
    toCreate.push({
      sourceId: pair.sourceId,
      vhost: pair.vhost,
      queue: pair.queue,
      entityKey: pair.entityKey,
      entityKeyRule: pair.entityKey === null ? null : ruleOf(pair.entityKeyRule),
      reason: `replay job ${jobId}`,
    })
  }
  return insertPauses({ sql: tx, actor, replayJobId: jobId, pauses: toCreate, summary: (p) => `Paused ${describePause(p)} for replay job ${jobId}` })
}
