import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { toSourceDto } from './to-source-dto'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'

/** Removes a source that stored nothing; one with dead letters is only disabled, never deleted with its data. */
export async function deleteSource({ id, actor }: { id: string; actor: string }): Promise<{ id: string; deleted: true }> {
  const { prisma, sql } = await getDb()
  const sourceId = parseId(id, 'source')
  const existing = await prisma.source.findUnique({ where: { id: sourceId } })
  if (!existing) throw notFound(`source ${id}`)
  const stored = await prisma.deadLetter.count({ where: { sourceId } })
  if (stored > 0) {
    throw new AppError('conflict', `source ${id} holds ${stored} stored dead letters; disable it with PATCH {"enabled": false} instead`)
  }
  await prisma.source.delete({ where: { id: sourceId } })
  // Its per-source counters and buckets (no foreign key, see migration 20261205200000_group_source_counters): zeros, or
  // history of messages retention removed. The buckets are found through the counters' (group, source) pairs.
  await sql.query(
    `WITH buckets AS (
       DELETE FROM group_source_arrivals a USING group_source_stats s
       WHERE s.source_id = $1::bigint AND a.group_id = s.group_id AND a.source_id = s.source_id
     )
     DELETE FROM group_source_stats WHERE source_id = $1::bigint`,
    [sourceId.toString()],
  )
  await recordConfigChange({ sql: sql, actor, action: 'source.deleted', subject: { type: 'source', id }, summary: `Removed source ${existing.queue}`, before: toSourceDto(existing), after: null })
  return { id, deleted: true }
}
