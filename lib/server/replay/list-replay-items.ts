import 'server-only'
import type { z } from 'zod'
import type { Db } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { listReplayItemsQuerySchema, ReplayItemListDto } from '@/lib/shared/schemas/replay'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { jobVisible, selectItemPage } from './replay-store'
import { toReplayItemDto } from './to-replay-dto'

export type ListReplayItemsOptions = { db: Db; id: string; query: z.infer<typeof listReplayItemsQuerySchema> } & SourceScope

/** GET /api/replays/{id}/items: each message's outcome, in publish order, keyset-paginated on seq. */
export async function listReplayItems({ db, id, query, ...scope }: ListReplayItemsOptions): Promise<ReplayItemListDto> {
  const jobId = parseId(id, 'replay').toString()
  let after = 0
  if (query.cursor !== undefined) {
    if (!/^[0-9]{1,9}$/.test(query.cursor)) throw new AppError('invalid', 'cursor is not valid; use the nextCursor value of a previous page')
    after = Number(query.cursor)
  }
  if (!(await jobVisible({ sql: db.sql, id: jobId, sourceIds: allowedSourceIds(scope) }))) throw notFound(`replay ${id}`)
  const rows = await selectItemPage({ sql: db.sql, jobId, afterSeq: after, limit: query.limit + 1, status: query.status })
  const page = rows.slice(0, query.limit)
  return { items: page.map(toReplayItemDto), nextCursor: rows.length > query.limit ? String(page[page.length - 1].seq) : null }
}
