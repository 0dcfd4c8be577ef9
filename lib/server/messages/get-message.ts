import 'server-only'
import { getDb } from '@/lib/server/db'
import type { Sql } from '@/lib/server/db/sql'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'
import type { MessageDetailDto, MessageSummaryDto } from '@/lib/shared/schemas/message'
import { SUMMARY_COLUMNS, toMessageDetail, toMessageSummary, type DetailRow, type SummaryRow } from './to-message-dto'

/** Bodies above this travel truncated in the detail JSON; /api/messages/{id}/body always gives the whole body. */
const MAX_INLINE_BODY = 256 * 1024
const SAME_GROUP_LIMIT = 5
const SAME_ENTITY_LIMIT = 10

export async function getMessage({ id }: { id: string }): Promise<MessageDetailDto> {
  const { sql } = await getDb()
  const messageId = parseId(id, 'message')
  const { rows } = await sql.query<DetailRow>(
    `SELECT ${SUMMARY_COLUMNS}, substring(d.body FROM 1 FOR ${MAX_INLINE_BODY + 1}) AS body, d.properties, d.headers, d.x_death,
       d.origin_exchange, d.origin_routing_keys, d.origin_queue, d.delivery_exchange, d.delivery_routing_key, d.redelivered,
       d.error_stack, d.error_message AS full_error_message, d.last_death_at, g.title AS group_title,
       d.lineage_origin_id, d.replay_count
     FROM dead_letters d JOIN sources s ON s.id = d.source_id JOIN error_groups g ON g.id = d.group_id
     WHERE d.id = $1::bigint`,
    [messageId.toString()],
  )
  const row = rows[0]
  if (!row) throw notFound(`message ${id}`)
  const [sameGroup, sameEntity] = await Promise.all([
    relatedMessages(sql, { where: 'd.group_id = $2::bigint', order: 'DESC', limit: SAME_GROUP_LIMIT }, [row.id, row.group_id]),
    row.entity_key === null
      ? []
      : relatedMessages(sql, { where: 'd.entity_key = $2', order: 'ASC', limit: SAME_ENTITY_LIMIT }, [row.id, row.entity_key]),
  ])
  const detail = toMessageDetail(row, { maxInlineBody: MAX_INLINE_BODY })
  return {
    ...detail,
    body: { ...detail.body, size: row.body_size, truncated: row.body_size > MAX_INLINE_BODY },
    related: { sameGroup, sameEntity },
  }
}

type RelatedQuery = { where: string; order: 'ASC' | 'DESC'; limit: number }

/**
 * Other messages (never the one shown) matching one condition, in failed_at order: both conditions lead an index
 * ending in (failed_at, id), scanned forwards or backwards.
 */
async function relatedMessages(sql: Sql, query: RelatedQuery, params: [string, string]): Promise<MessageSummaryDto[]> {
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM dead_letters d JOIN sources s ON s.id = d.source_id
     WHERE d.id <> $1::bigint AND ${query.where}
     ORDER BY d.failed_at ${query.order}, d.id ${query.order} LIMIT ${query.limit}`,
    params,
  )
  return rows.map(toMessageSummary)
}
