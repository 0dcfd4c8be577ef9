import { z } from 'zod'
import { idSchema as id, isoDateSchema, text } from './fields'

/*
 * The message-list filter: what GET /api/messages and its count narrow by, and what a replay, a resolve or an export
 * selects with. Its own module because both message.ts (the list) and replay.ts (the selection) are built on it.
 */

export const MESSAGE_STATUSES = ['dead', 'replaying', 'replayed', 'resolved', 'held'] as const
export const FAILURE_KINDS = ['invalid', 'transient', 'exhausted', 'expired', 'overflow', 'delivery-limit', 'unknown'] as const

export const messageFilterSchema = z.object({
  group: id.optional(),
  source: id.optional(),
  status: z.enum(MESSAGE_STATUSES).optional(),
  failureKind: z.enum(FAILURE_KINDS).optional(),
  service: text().min(1).max(256).optional(),
  serviceVersion: text().min(1).max(128).optional(),
  entity: text().min(1).max(1024).optional(),
  q: text().trim().min(1).max(200).optional(),
  from: isoDateSchema.optional(),
  to: isoDateSchema.optional(),
})

export type MessageFilter = z.infer<typeof messageFilterSchema>
