import 'server-only'
import { getDb } from '@/lib/server/db'
import type { PauseListDto } from '@/lib/shared/schemas/pause'
import { PAUSE_COLUMNS, toPauseDto, type PauseRow } from './pause-row'

export type ListPausesOptions = { status: 'active' | 'all' }

/** Resumed pauses listed with status=all (newest first, after the open ones). */
const MAX_LISTED = 500

/**
 * GET /api/pauses → {version, pauses}. One statement, so the version and the list come from the same snapshot:
 * a guard that later sees an event above `version` knows the list already reflects everything below it.
 */
export async function listPauses({ status }: ListPausesOptions): Promise<PauseListDto> {
  const { sql } = await getDb()
  const filter = status === 'active' ? `WHERE p.status <> 'resumed'` : ''
  const { rows } = await sql.query<PauseRow & { registry_version: string }>(
    `WITH registry AS (SELECT coalesce(max(version), 0)::text AS registry_version FROM pauses)
     SELECT registry.registry_version, listed.* FROM registry
     LEFT JOIN LATERAL (
       SELECT ${PAUSE_COLUMNS} FROM pauses p ${filter}
       ORDER BY (p.status = 'resumed'), p.id DESC LIMIT ${MAX_LISTED}
     ) listed ON true`,
  )
  return {
    version: Number(rows[0]?.registry_version ?? 0),
    pauses: rows.filter((r) => r.id !== null).map(toPauseDto),
  }
}
