import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { logger } from '@/lib/server/platform/log'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import { publishControlEvents } from './control-events'
import { ruleOf } from './create-pause'
import { describePause, findOpenPauses, insertPauses, markResumed } from './insert-pause'
import { toControlEvents } from './pause-row'
import { claimHeldRows, insertReleaseItems, notCoveredByOtherPause } from './release-items'
import { releaseStragglers } from '@/lib/server/engines/release/release-stragglers'

/** The functions the replay module calls (design: "Pause, guard, hold"). */
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

export type AppendReleaseItemsOptions = { tx: Sql; jobId: string }

/**
 * Appends, after the job's last item, release items for the messages held under the job's pauses, in arrival
 * order (dead_letters id order), and marks those pauses 'releasing'. Call once the replay items are final; it can
 * be called again to pick up messages held meanwhile. Returns how many items were added.
 */
export async function appendReleaseItems({ tx, jobId }: AppendReleaseItemsOptions): Promise<number> {
  const { rows: pauses } = await tx.query<{ id: string }>(
    `UPDATE pauses SET status = 'releasing' WHERE replay_job_id = $1::bigint AND status <> 'resumed' RETURNING id::text`,
    [jobId],
  )
  if (pauses.length === 0) return 0
  const { rows: job } = await tx.query<{ created_by: string }>('SELECT created_by FROM replay_jobs WHERE id = $1::bigint', [jobId])
  const held = await claimHeldRows(tx, {
    where: `EXISTS (SELECT 1 FROM pauses p WHERE p.replay_job_id = $1::bigint AND p.status <> 'resumed'
              AND p.vhost = s.vhost AND p.queue = d.held_from AND (p.entity_key IS NULL OR d.entity_key = p.entity_key))
            AND ${notCoveredByOtherPause('o.replay_job_id IS NOT DISTINCT FROM $1::bigint')}`,
    params: [jobId],
    actor: job[0]?.created_by ?? 'lazarus',
  })
  return insertReleaseItems(tx, jobId, held)
}

export type ResumeJobPausesOptions = { sql: Sql; jobId: string; actor: string }

/**
 * Resumes every pause of a job (each at its own registry version, audited) and publishes the 'resume' events.
 * Messages a guard held in the moment before the event reached it are released by the straggler sweep, which
 * runs once right here and then periodically.
 */
export async function resumeJobPauses({ sql, jobId, actor }: ResumeJobPausesOptions): Promise<void> {
  const resumed = await sql.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id::text FROM pauses WHERE replay_job_id = $1::bigint AND status <> 'resumed' ORDER BY id FOR UPDATE`,
      [jobId],
    )
    return markResumed({ sql: tx, ids: rows.map((r) => r.id), actor, summary: (p) => `Resumed ${describePause(p)} after job ${jobId}` })
  })
  await publishControlEvents(toControlEvents('resume', resumed))
  if (resumed.length > 0) {
    await releaseStragglers({ sql }).catch((error: unknown) =>
      logger('pauses').warn('cannot release held stragglers now; the periodic sweep will', { job: jobId, error: (error as Error).message }),
    )
  }
}
