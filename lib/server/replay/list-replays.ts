import 'server-only'
import type { z } from 'zod'
import { getDb } from '@/lib/server/platform/db'
import { decodeKeysetCursor as decodeCursor } from '@/lib/server/messages/message-cursor'
import type { listReplaysQuerySchema, ReplayListDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { JOB_COLUMNS, jobWithinSourcesSql, toReplayJobDto, type JobDtoRow } from './to-replay-dto'

export type ListReplaysOptions = z.infer<typeof listReplaysQuerySchema>

/**
 * Replay and release jobs, newest first, keyset-paginated on (created_at, id). With `sourceIds`, only jobs all of
 * whose messages are of those sources.
 */
export async function listReplays(query: ListReplaysOptions, scope: SourceScope = {}): Promise<ReplayListDto> {
  const { sql } = await getDb()
  const params: unknown[] = []
  const where: string[] = []
  const sourceIds = allowedSourceIds(scope)
  if (sourceIds) {
    params.push(sourceIds)
    where.push(jobWithinSourcesSql(`$${params.length}`))
  }
  if (query.status) {
    params.push(query.status)
    where.push(`j.status = $${params.length}`)
  }
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor)
    params.push(cursor.at, cursor.id)
    where.push(`(j.created_at, j.id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`)
  }
  params.push(query.limit + 1)
  const { rows } = await sql.query<JobDtoRow & { created_at_text: string }>(
    `SELECT ${JOB_COLUMNS}, to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at_text
     FROM replay_jobs j WHERE ${where.length ? where.join(' AND ') : 'TRUE'}
     ORDER BY j.created_at DESC, j.id DESC LIMIT $${params.length}`,
    params,
  )
  const page = rows.slice(0, query.limit)
  const last = page[page.length - 1]
  // Microseconds in the cursor: JS dates stop at milliseconds, and jobs created in the same millisecond must not be skipped.
  const nextCursor = rows.length > query.limit && last ? Buffer.from(`${last.created_at_text}|${last.id}`, 'utf8').toString('base64url') : null
  return { replays: page.map(toReplayJobDto), nextCursor }
}
