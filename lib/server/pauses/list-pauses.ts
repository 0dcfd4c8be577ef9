import 'server-only'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { getDb } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'
import type { ListPausesQuery, PauseListDto } from '@/lib/shared/schemas/pause'
import { recordGuardHeartbeat } from './guard-heartbeat'
import { PAUSE_COLUMNS, toPauseDto, type PauseRow } from './pause-row'

const log = logger('pauses')

export type ListPausesOptions = Pick<ListPausesQuery, 'status'> & Partial<Omit<ListPausesQuery, 'status'>> & SourceScope

/** Resumed pauses listed with status=all (newest first, after the open ones). */
const MAX_LISTED = 500

/**
 * GET /api/pauses → {version, pauses}. One statement, so the version and the list come from the same snapshot:
 * a list at `version` reflects every registry change up to it. With `queue` only that queue's pauses are listed
 * (in `vhost`, default `/`: a guard's own); the version stays the registry's. A guard's poll also names its
 * `instance`, recorded as its heartbeat.
 */
export async function listPauses(options: ListPausesOptions): Promise<PauseListDto> {
  const { sql } = await getDb()
  const conditions: string[] = []
  const params: unknown[] = []
  if (options.status === 'active') conditions.push(`p.status <> 'resumed'`)
  const sourceIds = allowedSourceIds(options)
  if (sourceIds) {
    params.push(sourceIds)
    conditions.push(`p.source_id = ANY($${params.length}::bigint[])`)
  }
  const vhost = options.vhost ?? '/'
  if (options.queue !== undefined) {
    params.push(vhost, options.queue)
    conditions.push(`p.vhost = $${params.length - 1} AND p.queue = $${params.length}`)
  }
  const filter = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''
  const { rows } = await sql.query<PauseRow & { registry_version: string }>(
    `WITH registry AS (SELECT coalesce(max(version), 0)::text AS registry_version FROM pauses)
     SELECT registry.registry_version, listed.* FROM registry
     LEFT JOIN LATERAL (
       SELECT ${PAUSE_COLUMNS} FROM pauses p ${filter}
       ORDER BY (p.status = 'resumed'), p.id DESC LIMIT ${MAX_LISTED}
     ) listed ON true`,
    params,
  )
  if (options.instance !== undefined && options.queue !== undefined) {
    // Bookkeeping only: a guard that cannot be recorded must still get its pauses.
    await recordGuardHeartbeat(sql, { vhost, queue: options.queue, instance: options.instance, guardVersion: options.guardVersion ?? null }).catch((error) =>
      log.warn('cannot record a guard heartbeat', { queue: options.queue, instance: options.instance, error: (error as Error).message }),
    )
  }
  return {
    version: Number(rows[0]?.registry_version ?? 0),
    pauses: rows.filter((r) => r.id !== null).map(toPauseDto),
  }
}
