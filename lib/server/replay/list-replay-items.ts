import 'server-only'
import type { z } from 'zod'
import { getDb } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { listReplayItemsQuerySchema, ReplayItemListDto } from '@/lib/shared/schemas/replay'
import { ITEM_STATUS_SQL } from './item-status-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { jobWithinSourcesSql, toReplayItemDto, type ItemDtoRow } from './to-replay-dto'

export type ListReplayItemsOptions = { id: string; query: z.infer<typeof listReplayItemsQuerySchema> } & SourceScope

/** GET /api/replays/{id}/items: each message's outcome, in publish order, keyset-paginated on seq. */
export async function listReplayItems({ id, query, ...scope }: ListReplayItemsOptions): Promise<ReplayItemListDto> {
  const jobId = parseId(id, 'replay').toString()
  let after = 0
  if (query.cursor !== undefined) {
    if (!/^[0-9]{1,9}$/.test(query.cursor)) throw new AppError('invalid', 'cursor is not valid; use the nextCursor value of a previous page')
    after = Number(query.cursor)
  }
  const { sql } = await getDb()
  const sourceIds = allowedSourceIds(scope)
  const { rows: job } = sourceIds
    ? await sql.query(`SELECT 1 FROM replay_jobs j WHERE j.id = $1::bigint AND ${jobWithinSourcesSql('$2')}`, [jobId, sourceIds])
    : await sql.query('SELECT 1 FROM replay_jobs WHERE id = $1::bigint', [jobId])
  if (job.length === 0) throw notFound(`replay ${id}`)
  const params: unknown[] = [jobId, after, query.limit + 1]
  let statusSql = ''
  if (query.status) {
    params.push(query.status)
    statusSql = `AND ${ITEM_STATUS_SQL} = $${params.length}`
  }
  const { rows } = await sql.query<ItemDtoRow>(
    `SELECT i.seq, i.dead_letter_id::text, i.kind, i.replay_id, ${ITEM_STATUS_SQL} AS status, i.exchange, i.routing_key, i.error, i.published_at,
       i.finished_at, d.entity_key, d.error_type
     FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id LEFT JOIN dead_letters d ON d.id = i.dead_letter_id
     WHERE i.job_id = $1::bigint AND i.seq > $2::int ${statusSql}
     ORDER BY i.seq LIMIT $3`,
    params,
  )
  const page = rows.slice(0, query.limit)
  return { items: page.map(toReplayItemDto), nextCursor: rows.length > query.limit ? String(page[page.length - 1].seq) : null }
}
