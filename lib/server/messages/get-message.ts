import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { ITEM_STATUS_SQL } from '@/lib/server/replay/item-status-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import type { MessageReplayDto, ReplayedFromDto } from '@/lib/shared/schemas/replay'
import { MESSAGES_FROM } from '@/lib/server/selection/message-filter-sql'
import { effectiveTraceTemplate } from '@/lib/server/traces/trace-settings'
import { messageTrace } from '@/lib/server/traces/message-trace'
import { redactDetailRow, redactSummaryRow } from './redact-rows'
import { needsRedaction, type RedactedView } from './redacted-search'
import { SUMMARY_COLUMNS, toMessageDetail, toMessageSummary, type DetailRow, type SummaryRow } from './to-message-dto'

/** Bodies above this travel truncated in the detail JSON; /api/messages/{id}/body always gives the whole body. */
const MAX_INLINE_BODY = 256 * 1024
const SAME_GROUP_LIMIT = 5
const SAME_ENTITY_LIMIT = 10

export type GetMessageOptions = {
  db: Db
  id: string
  /** A caller who sees some sources' messages redacted (a viewer): a message of such a source comes redacted. */
  view?: RedactedView
} & SourceScope

/**
 * One message with everything stored and derived. With `sourceIds`, a message of another source is not found, and
 * its related messages and replay origin come from those sources only.
 */
export async function getMessage({ db, id, view, ...scope }: GetMessageOptions): Promise<MessageDetailDto> {
  const { sql } = db
  const messageId = parseId(id, 'message')
  const sourceIds = allowedSourceIds(scope)
  const { rows } = await sql.query<DetailRow>(
    `SELECT ${SUMMARY_COLUMNS}, substring(d.body FROM 1 FOR ${MAX_INLINE_BODY + 1}) AS body, d.properties, d.headers,
       -- New rows leave x_death empty and keep it in their headers only (store-batch.ts); older rows hold both.
       coalesce(d.x_death, d.headers -> 'x-death') AS x_death,
       d.origin_exchange, d.origin_routing_keys, d.delivery_exchange, d.delivery_routing_key, d.redelivered,
       d.error_stack, d.error_message AS full_error_message, d.last_death_at, g.title AS group_title,
       d.lineage_origin_id, d.replay_count, st.status_reason, st.status_changed_at, st.status_changed_by, d.lineage_replay_id,
       d.trace_id, d.span_id
     FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id JOIN error_groups g ON g.id = d.group_id
     WHERE d.id = $1::bigint${sourceIds ? ' AND d.source_id = ANY($2::bigint[])' : ''}`,
    sourceIds ? [messageId.toString(), sourceIds] : [messageId.toString()],
  )
  const row = rows[0]
  if (!row) throw notFound(`message ${id}`)
  const [sameGroup, sameEntity, replays, replayedFrom, traceTemplate] = await Promise.all([
    sourceIds
      ? relatedMessages({ sql, where: 'd.group_id = $2::bigint AND d.source_id = ANY($3::bigint[])', order: 'DESC', limit: SAME_GROUP_LIMIT, idsFirst: true, params: [row.id, row.group_id, sourceIds] })
      : relatedMessages({ sql, where: 'd.group_id = $2::bigint', order: 'DESC', limit: SAME_GROUP_LIMIT, params: [row.id, row.group_id] }),
    row.entity_key === null
      ? []
      : sourceIds
        ? relatedMessages({ sql, where: 'd.entity_key = $2 AND d.source_id = ANY($3::bigint[])', order: 'ASC', limit: SAME_ENTITY_LIMIT, params: [row.id, row.entity_key, sourceIds] })
        : relatedMessages({ sql, where: 'd.entity_key = $2', order: 'ASC', limit: SAME_ENTITY_LIMIT, params: [row.id, row.entity_key] }),
    replayHistory({ sql, id: row.id }),
    row.lineage_replay_id === null ? null : replaySourceOf({ sql, replayId: row.lineage_replay_id, sourceIds }),
    effectiveTraceTemplate({ db }),
  ])
  const redacted = needsRedaction(view, row.source_id)
  const shown = redacted ? redactDetailRow(row, view.redactor) : row
  const detail = toMessageDetail(shown, { maxInlineBody: MAX_INLINE_BODY })
  const summary = (r: SummaryRow) => toMessageSummary(needsRedaction(view, r.source_id) ? redactSummaryRow(r, view.redactor) : r)
  return {
    ...detail,
    redacted,
    trace: messageTrace({ stored: { traceId: row.trace_id, spanId: row.span_id }, headers: shown.headers, template: traceTemplate, redacted }),
    body: { ...detail.body, size: row.body_size, truncated: row.body_size > MAX_INLINE_BODY },
    related: { sameGroup: sameGroup.map(summary), sameEntity: sameEntity.map(summary) },
    replays,
    replayedFrom,
  }
}

const REPLAY_HISTORY_LIMIT = 50

/** The message's replay and release items (replay_items_dead_letter_idx), oldest job first. */
async function replayHistory({ sql, id }: { sql: Sql; id: string }): Promise<MessageReplayDto[]> {
  const { rows } = await sql.query<{
    job_id: string; kind: MessageReplayDto['kind']; replay_id: string; status: MessageReplayDto['status']; exchange: string | null
    routing_key: string | null; error: string | null; created_by: string; created_at: Date; published_at: Date | null; finished_at: Date | null
    superseded_by_version: number | null; superseded_note: string | null
  }>(
    `SELECT i.job_id::text, i.kind, i.replay_id, ${ITEM_STATUS_SQL} AS status, i.exchange, i.routing_key, i.error, j.created_by, j.created_at, i.published_at, i.finished_at,
       i.superseded_by_version, i.superseded_note
     FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id
     WHERE i.dead_letter_id = $1::bigint ORDER BY i.job_id LIMIT ${REPLAY_HISTORY_LIMIT}`,
    [id],
  )
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null)
  return rows.map((r) => ({
    jobId: r.job_id, kind: r.kind, replayId: r.replay_id, status: r.status, exchange: r.exchange, routingKey: r.routing_key, error: r.error,
    createdBy: r.created_by, createdAt: iso(r.created_at)!, publishedAt: iso(r.published_at), finishedAt: iso(r.finished_at),
    supersededByVersion: r.superseded_by_version, supersededNote: r.superseded_note,
  }))
}

/**
 * The copy this message was replayed from: the dead letter of the replay item whose replay id it carried (for a
 * restricted caller, only if that copy is in one of their sources).
 */
async function replaySourceOf({ sql, replayId, sourceIds }: { sql: Sql; replayId: string; sourceIds: string[] | null }): Promise<ReplayedFromDto | null> {
  const { rows } = sourceIds
    ? await sql.query<{ dead_letter_id: string; job_id: string }>(
      `SELECT i.dead_letter_id::text, i.job_id::text FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id
       WHERE i.replay_id = $1 AND d.source_id = ANY($2::bigint[]) LIMIT 1`,
      [replayId, sourceIds],
    )
    : await sql.query<{ dead_letter_id: string; job_id: string }>(
      'SELECT dead_letter_id::text, job_id::text FROM replay_items WHERE replay_id = $1 LIMIT 1',
      [replayId],
    )
  return rows[0] ? { messageId: rows[0].dead_letter_id, jobId: rows[0].job_id, replayId } : null
}

/** `where` is numbered against `params` ($1: the message shown). `idsFirst`: pick the ids on `d` alone, then read those rows. */
type RelatedQuery = { sql: Sql; where: string; params: unknown[]; order: 'ASC' | 'DESC'; limit: number; idsFirst?: boolean }

/**
 * Other messages (never the one shown) matching one condition, in failed_at order: both conditions lead an index
 * ending in (failed_at, id), scanned forwards or backwards. With `idsFirst` the ids are chosen by a query on
 * dead_letters alone, which dead_letters_group_idx answers by an index-only scan when the condition adds the source
 * (an INCLUDEd column) to the group: the other sources' messages it passes over are not read from the heap.
 */
async function relatedMessages({ sql, params, ...query }: RelatedQuery): Promise<SummaryRow[]> {
  const order = `d.failed_at ${query.order}, d.id ${query.order}`
  const where = query.idsFirst
    ? `d.id = ANY(ARRAY(SELECT d.id FROM dead_letters d WHERE d.id <> $1::bigint AND ${query.where} ORDER BY ${order} LIMIT ${query.limit}))`
    : `d.id <> $1::bigint AND ${query.where}`
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM ${MESSAGES_FROM} JOIN sources s ON s.id = d.source_id
     WHERE ${where}
     ORDER BY ${order} LIMIT ${query.limit}`,
    params,
  )
  return rows
}
