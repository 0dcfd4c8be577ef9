import 'server-only'
import type { z } from 'zod'
import type { Db } from '@/lib/server/platform/db'
import { decodeKeysetCursor as decodeCursor } from '@/lib/server/platform/db/keyset-cursor'
import type { listReplaysQuerySchema, ReplayListDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { selectJobPage } from './replay-store'
import { toReplayJobDto } from './to-replay-dto'

export type ListReplaysQuery = z.infer<typeof listReplaysQuerySchema>

export type ListReplaysOptions = { db: Db; query: ListReplaysQuery } & SourceScope

/**
 * Replay and release jobs, newest first, keyset-paginated on (created_at, id). With `sourceIds`, only jobs all of
 * whose messages are of those sources.
 */
export async function listReplays({ db, query, ...scope }: ListReplaysOptions): Promise<ReplayListDto> {
  const rows = await selectJobPage({
    sql: db.sql,
    sourceIds: allowedSourceIds(scope),
    status: query.status,
    cursor: query.cursor ? decodeCursor(query.cursor) : null,
    limit: query.limit + 1,
  })
  const page = rows.slice(0, query.limit)
  const last = page[page.length - 1]
  // Microseconds in the cursor: JS dates stop at milliseconds, and jobs created in the same millisecond must not be skipped.
  const nextCursor = rows.length > query.limit && last ? Buffer.from(`${last.created_at_text}|${last.id}`, 'utf8').toString('base64url') : null
  return { replays: page.map(toReplayJobDto), nextCursor }
}
