import 'server-only'
import type { z } from 'zod'
import { getDb } from '@/lib/server/db'
import type { AlertEventDto, listAlertEventsQuerySchema } from '@/lib/shared/schemas/alert'
import { ALERT_EVENT_COLUMNS, toAlertEventDto, type AlertEventRow } from './alert-dto'

/** The alert history, newest first; the cursor is the last id seen. */
export async function listAlertEvents(query: z.infer<typeof listAlertEventsQuerySchema>): Promise<{ events: AlertEventDto[]; nextCursor: string | null }> {
  const { sql } = await getDb()
  const { rows } = await sql.query<AlertEventRow>(
    `SELECT ${ALERT_EVENT_COLUMNS} FROM alert_events WHERE ($1::bigint IS NULL OR id < $1::bigint) ORDER BY id DESC LIMIT $2`,
    [query.cursor || null, query.limit + 1],
  )
  const page = rows.slice(0, query.limit)
  return { events: page.map(toAlertEventDto), nextCursor: rows.length > query.limit ? page[page.length - 1].id : null }
}
