import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { ExchangePublisher } from '@/lib/server/platform/broker/exchange-publisher'
import type { Db } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { PauseDto } from '@/lib/shared/schemas/pause'
import { publishControlEvents } from './control-events'
import { describePause } from './pause-audit'
import { markResumed } from './insert-pause'
import { selectPauses, toControlEvents } from './pause-row'
import { lockPauseToResume, markReleasing } from './pauses-store'
import { claimHeldRows, createReleaseJob, notCoveredByOtherPause } from './release-items'

/** `control`: where the 'resume' event goes after the commit (the composition root's publisher of lazarus.control). */
export type ResumePauseOptions = { db: Db; control: ExchangePublisher; id: string; actor: string } & SourceScope

/**
 * DELETE /api/pauses/{id}. Without held messages the pause is resumed at once (a 'resume' event follows).
 * With some, it becomes 'releasing' and a kind='release' job sends them back in arrival order; the executor
 * resumes the pause when that job ends (resumeJobPauses), so guards keep holding until the backlog is out.
 */
export async function resumePause({ db, control, id, actor, ...scope }: ResumePauseOptions): Promise<PauseDto> {
  const pauseId = parseId(id, 'pause').toString()
  const sourceIds = allowedSourceIds(scope)
  const { pause, resumed } = await db.sql.transaction(async (tx) => {
    const row = await lockPauseToResume({ sql: tx, pauseId, sourceIds })
    if (!row) throw notFound(`pause ${id}`)
    if (row.status === 'resumed') throw new AppError('conflict', `pause ${id} was already resumed`)
    if (row.status === 'releasing') throw new AppError('conflict', `pause ${id} is already being released (job ${row.replay_job_id}); it resumes when that job ends`)
    if (row.replay_job_id && (row.job_status === 'pending' || row.job_status === 'running')) {
      throw new AppError('conflict', `pause ${id} belongs to replay job ${row.replay_job_id}, which resumes it when it ends; cancel the job to end it sooner`, {
        replayJobId: row.replay_job_id,
      })
    }
    const held = await claimHeldRows({
      sql: tx,
      where: `s.vhost = $1 AND d.held_from = $2 AND ($3::text IS NULL OR d.entity_key = $3::text) AND ${notCoveredByOtherPause('o.id = $4::bigint')}`,
      params: [row.vhost, row.queue, row.entity_key, pauseId],
      actor,
    })
    const jobId = await createReleaseJob({ sql: tx, rows: held, actor })
    if (jobId === null) {
      const resumed = await markResumed({ sql: tx, ids: [pauseId], actor })
      return { pause: resumed[0], resumed }
    }
    await markReleasing({ sql: tx, pauseId, jobId })
    const [pause] = await selectPauses({ sql: tx, where: 'p.id = $1::bigint', params: [pauseId] })
    await recordAudit({
      sql: tx,
      actor,
      action: 'pause.resumed',
      subject: { type: 'pause', id: pause.id },
      summary: `Resume of ${describePause(pause)} requested: releasing ${held.length} held message${held.length === 1 ? '' : 's'} (job ${jobId}) first`,
      details: { queue: pause.queue, vhost: pause.vhost, entityKey: pause.entityKey, releaseJobId: jobId, held: held.length },
      outcome: 'releasing',
    })
    return { pause, resumed: [] }
  })
  await publishControlEvents({ control, events: toControlEvents('resume', resumed) })
  return pause
}
