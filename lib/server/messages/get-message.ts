import 'server-only'
import { getDb } from '@/lib/server/db'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import { SUMMARY_COLUMNS, toMessageDetail, type DetailRow } from './to-message-dto'

/** Bodies above this travel truncated in the detail JSON; /api/messages/{id}/body always gives the whole body. */
const MAX_INLINE_BODY = 256 * 1024

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
  if (!rows[0]) throw notFound(`message ${id}`)
  const detail = toMessageDetail(rows[0], { maxInlineBody: MAX_INLINE_BODY })
  return { ...detail, body: { ...detail.body, size: rows[0].body_size, truncated: rows[0].body_size > MAX_INLINE_BODY } }
}
