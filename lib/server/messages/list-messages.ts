import 'server-only'
import { getDb } from '@/lib/server/db'
import type { ListMessagesQuery, MessageSummaryDto } from '@/lib/shared/schemas/message'
import { decodeCursor, encodeCursor } from './message-cursor'
import { messageFilterSql } from './message-filter-sql'
import { SUMMARY_COLUMNS, toMessageSummary, type SummaryRow } from './to-message-dto'

/** Newest failures first, keyset-paginated on (failed_at, id) so deep pages cost the same as the first. */
export async function listMessages(query: ListMessagesQuery): Promise<{ messages: MessageSummaryDto[]; nextCursor: string | null }> {
  const { sql } = await getDb()
  const params: unknown[] = []
  let where = messageFilterSql(query, params)
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor)
    params.push(cursor.failedAt, cursor.id)
    where += ` AND (d.failed_at, d.id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`
  }
  params.push(query.limit + 1)
  const { rows } = await sql.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM dead_letters d JOIN sources s ON s.id = d.source_id
     WHERE ${where} ORDER BY d.failed_at DESC, d.id DESC LIMIT $${params.length}`,
    params,
  )
  const page = rows.slice(0, query.limit)
  const last = page[page.length - 1]
  return {
    messages: page.map(toMessageSummary),
    nextCursor: rows.length > query.limit && last ? encodeCursor({ failedAt: new Date(last.failed_at).toISOString(), id: last.id }) : null,
  }
}
