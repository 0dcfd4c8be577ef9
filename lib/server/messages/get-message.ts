import 'server-only'
import { getDb } from '@/lib/server/db'
import type { Sql } from '@/lib/server/db/sql'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'
import { ITEM_STATUS_SQL } from '@/lib/server/replay/item-status-sql'
import type { MessageDetailDto, MessageSummaryDto } from '@/lib/shared/schemas/message'
import type { MessageReplayDto, ReplayedFromDto } from '@/lib/shared/schemas/replay'
import { MESSAGES_FROM } from './message-filter-sql'
import { SUMMARY_COLUMNS, toMessageDetail, toMessageSummary, type DetailRow, type SummaryRow } from './to-message-dto'

/** Bodies above this travel truncated in the detail JSON; /api/messages/{id}/body always gives the whole body. */
const MAX_INLINE_BODY = 256 * 1024
const SAME_GROUP_LIMIT = 5
const SAME_ENTITY_LIMIT = 10

export async function getMessage({ id }: { id: string }): Promise<MessageDetailDto> {
  const { sql } = await getDb()
  const messageId = parseId(id, 'message')
  const { rows } = await sql.query<DetailRow>(
    `SELECT ${SUMMARY_COLUMNS}, substring(d.body FROM 1 FOR ${MAX_INLINE_BODY + 1}) AS body, d.properties, d.headers,
       -- New rows leave x_death empty and keep it in their headers only (store-batch.ts); older rows hold both.
       coalesce(d.x_death, d.headers -> 'x-death') AS x_death,
       d.origin_exchange, d.origin_routing_keys, d.origin_queue, d.delivery_exchange, d.delivery_routing_key, d.redelivered,
       d.error_stack, d.error_message AS full_error_message, d.last_death_at, g.title AS group_title,
       d.lineage_origin_id, d.replay_count, st.status_reason, st.status_changed_at, st.status_changed_by, d.lineage_replay_id
     FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id JOIN error_groups g ON g.id = d.group_id
     WHERE d.id = $1::bigint`,
    [messageId.toString()],
  )
  const row = rows[0]
  if (!row) throw notFound(`message ${id}`)
  const [sameGroup, sameEntity, replays, replayedFrom] = await Promise.all([
    relatedMessages(sql, { where: 'd.group_id = $2::bigint', order: 'DESC', limit: SAME_GROUP_LIMIT }, [row.id, row.group_id]),
    row.entity_key === null
      ? []
      : relatedMessages(sql, { where: 'd.entity_key = $2', order: 'ASC', limit: SAME_ENTITY_LIMIT }, [row.id, row.entity_key]),
    replayHistory(sql, row.id),
    row.lineage_replay_id === null ? null : replaySourceOf(sql, row.lineage_replay_id),
  ])
  const detail = toMessageDetail(row, { maxInlineBody: MAX_INLINE_BODY })
  return {
    ...detail,
    body: { ...detail.body, size: row.body_size, truncated: row.body_size > MAX_INLINE_BODY },
    related: { sameGroup, sameEntity },
    replays,
    replayedFrom,
  }
}

const REPLAY_HISTORY_LIMIT = 50

/** The message's replay and release items (replay_items_dead_letter_idx), oldest job first. */
async function replayHistory(sql: Sql, id: string): Promise<MessageReplayDto[]> {
  const { rows } = await sql.query<{
    job_id: string; kind: MessageReplayDto['kind']; replay_id: string; status: MessageReplayDto['status']; exchange: string | null
    routing_key: string | null; error: string | null; created_by: string; created_at: Date; published_at: Date | null; finished_at: Date | null
  }>(
    `SELECT i.job_id::text, i.kind, i.replay_id, ${ITEM_STATUS_SQL} AS status, i.exchange, i.routing_key, i.error, j.created_by, j.created_at, i.published_at, i.finished_at
     FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id
     WHERE i.dead_letter_id = $1::bigint ORDER BY i.job_id LIMIT ${REPLAY_HISTORY_LIMIT}`,
    [id],
  )
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)
  return rows.map((r) => ({
    jobId: r.job_id, kind: r.kind, replayId: r.replay_id, status: r.status, exchange: r.exchange, routingKey: r.routing_key, error: r.error,
    createdBy: r.created_by, createdAt: iso(r.created_at)!, publishedAt: iso(r.published_at), finishedAt: iso(r.finished_at),
  }))
}

/** The copy this message was replayed from: the dead letter of the replay item whose replay id it carried. */
async function replaySourceOf(sql: Sql, replayId: string): Promise<ReplayedFromDto | null> {
  const { rows } = await sql.query<{ dead_letter_id: string; job_id: string }>(
    'SELECT dead_letter_id::text, job_id::text FROM replay_items WHERE replay_id = $1 LIMIT 1',
    [replayId],
  )
  return rows[0] ? { messageId: rows[0].dead_letter_id, jobId: rows[0].job_id, replayId } : null
}

type RelatedQuery = { where: string; order: 'ASC' | 'DESC'; limit: number }

/**
 * Other messages (never the one shown) matching one condition, in failed_at order: both conditions lead an index
 * ending in (failed_at, id), scanned forwards or backwards.
 */
async function relatedMessages(sql: Sql, query: RelatedQuery, params: [string, string]): Promise<MessageSummaryDto[]> {
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
     WHERE d.id <> $1::bigint AND ${query.where}
     ORDER BY d.failed_at ${query.order}, d.id ${query.order} LIMIT ${query.limit}`,
    params,
  )
  return rows.map(toMessageSummary)
}
