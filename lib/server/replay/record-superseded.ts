import 'server-only'
import type { z } from 'zod'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { formatVersion } from '@/packages/guard/src/entity-version'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { entityVersionRuleSchema } from '@/lib/shared/schemas/source'
import type { SupersededRecordedDto, supersededReportSchema } from '@/lib/shared/schemas/replay'
import { findItemByReplayId, markItemSuperseded } from './replay-store'

export type RecordSupersededOptions = {
  db: Db
  input: z.infer<typeof supersededReportSchema>
  actor: string
  /** The queue the caller's guard token is for; null: not a guard token, refused. */
  guardQueue: { vhost: string; queue: string } | null
}

/**
 * POST /api/guard/superseded (docs/ARCHITECTURE.md#entity-versions): a guard acked a replayed or released message
 * without handing it to the application, because it had let a higher version of the entity through. The item that
 * published it (found by its replay id) records the higher version and a note; the item keeps its outcome (the broker
 * confirmed it). Only a guard token reports, for its own queue, and only about an item that went to that queue. A
 * repeated report (a redelivery dropped again) changes nothing unless it names a higher version. Audited.
 */
export async function recordSuperseded({ db, input, actor, guardQueue }: RecordSupersededOptions): Promise<SupersededRecordedDto> {
  if (!guardQueue) throw new AppError('forbidden', 'only a guard token reports superseded messages (a token with the guard scope for the queue)')
  if (guardQueue.queue !== input.queue || guardQueue.vhost !== input.vhost) {
    throw new AppError('forbidden', `this guard token is for queue "${guardQueue.queue}" on vhost "${guardQueue.vhost}", not "${input.queue}" on "${input.vhost}"`)
  }
  return db.sql.transaction(async (tx) => {
    const item = await findItemByReplayId({ sql: tx, replayId: input.replayId })
    if (!item) return { recorded: false, jobId: null }
    const reached = item.held_from === input.queue || item.origin_queue === input.queue || (item.exchange === '' && item.routing_key === input.queue)
    if (!reached || item.vhost !== input.vhost) throw new AppError('unprocessable', `replay ${input.replayId} did not go to queue "${input.queue}"`)
    const rule = entityVersionRuleSchema.safeParse(item.rule)
    const type = rule.success ? rule.data.type : 'number'
    // Short, for the job's item list; which guard dropped which version is in the audit entry's details.
    const note = `superseded by version ${formatVersion(input.supersededBy, type)}`
    const recorded = await markItemSuperseded({ sql: tx, jobId: item.job_id, seq: item.seq, version: input.supersededBy, note })
    if (recorded) {
      await recordAudit({
        sql: tx,
        actor,
        action: 'replay.item-superseded',
        subject: { type: 'replay', id: item.job_id },
        summary: `A guard on ${input.queue} dropped message ${item.dead_letter_id} of replay ${item.job_id}: superseded by version ${formatVersion(input.supersededBy, type)}`,
        details: { ...input, jobId: item.job_id, messageId: item.dead_letter_id, droppedVersion: formatVersion(input.version, type) },
        outcome: 'superseded',
      })
    }
    return { recorded, jobId: item.job_id }
  })
}
