import 'server-only'
import type { z } from 'zod'
import type { Db } from '@/lib/server/platform/db'
import type { AlertEventListDto, listAlertEventsQuerySchema } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, visibleDelivery, type DeliveryErrorVisibility } from './alert-dto'
import { selectAlertEvents } from './alerts-store'

export type ListAlertEventsOptions = { db: Db; query: z.infer<typeof listAlertEventsQuerySchema> } & DeliveryErrorVisibility

/**
 * The alert history, newest first; the cursor is the last id seen. Failed deliveries come without their status and
 * error unless `includeDeliveryErrors` (admins only).
 */
export async function listAlertEvents({ db, query, ...visibility }: ListAlertEventsOptions): Promise<AlertEventListDto> {
  const rows = await selectAlertEvents({ sql: db.sql, before: query.cursor || null, limit: query.limit + 1 })
  const page = rows.slice(0, query.limit)
  return { events: page.map((row) => visibleDelivery(toAlertEventDto(row), visibility)), nextCursor: rows.length > query.limit ? page[page.length - 1].id : null }
}
