import 'server-only'
import type { z } from 'zod'
import { getDb } from '@/lib/server/platform/db'
import type { AlertEventListDto, listAlertEventsQuerySchema } from '@/lib/shared/schemas/alert'
import { ALERT_EVENT_COLUMNS, toAlertEventDto, visibleDelivery, type AlertEventRow, type DeliveryErrorVisibility } from './alert-dto'

/**
 * The alert history, newest first; the cursor is the last id seen. Failed deliveries come without their status and
 * error unless `includeDeliveryErrors` (admins only).
 */
export async function listAlertEvents(
  query: z.infer<typeof listAlertEventsQuerySchema>,
  visibility: DeliveryErrorVisibility = {},
): Promise<AlertEventListDto> {
  const { sql } = await getDb()
  const { rows } = await sql.query<AlertEventRow>(
    `SELECT ${ALERT_EVENT_COLUMNS} FROM alert_events WHERE ($1::bigint IS NULL OR id < $1::bigint) ORDER BY id DESC LIMIT $2`,
    [query.cursor || null, query.limit + 1],
  )
  const page = rows.slice(0, query.limit)
  return { events: page.map((row) => visibleDelivery(toAlertEventDto(row), visibility)), nextCursor: rows.length > query.limit ? page[page.length - 1].id : null }
}
