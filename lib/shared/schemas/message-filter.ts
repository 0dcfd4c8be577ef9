import { z } from 'zod'
import { fieldConditionsSchema, fieldFilterParam } from './field-filter'
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
  /** JetStream (docs/jetstream.md#sources): the stream a message failed in. */
  stream: text().trim().min(1).max(255).regex(/^[^\s.*>/\\]+$/, 'a stream name has no spaces, dots, "*", ">" or slashes').optional(),
  /** JetStream: the subject a message was published to; NATS wildcards (`orders.*`, `orders.>`) match as the server does. */
  subject: text().trim().min(1).max(255).regex(/^[^\s]+$/, 'a subject has no spaces').optional(),
  q: text().trim().min(1).max(200).optional(),
  /** Traces (docs/ARCHITECTURE.md#traces): one trace id exactly; a 64-bit id (16 hex) is left-padded as it is stored. */
  traceId: text().trim().regex(/^(?:[0-9a-fA-F]{16}|[0-9a-fA-F]{32})$/, 'a trace id is 16 or 32 hex characters').transform((id) => id.toLowerCase().padStart(32, '0')).optional(),
  from: isoDateSchema.optional(),
  to: isoDateSchema.optional(),
  /** Header, property and x-death conditions, all of which must hold; spelled `h.tenant=acme` etc. (field-filter.ts). */
  match: fieldConditionsSchema.optional(),
})

export type MessageFilter = z.infer<typeof messageFilterSchema>

/**
 * A filter as query parameters, `match` spelled as field filter parameters (`h.tenant=acme`): for links back to the
 * list, audit summaries and tickets. Dates as ISO strings.
 */
export function filterParams(filter: MessageFilter): [name: string, value: string][] {
  const out: [string, string][] = []
  for (const [key, value] of Object.entries(filter)) {
    if (value === undefined || key === 'match') continue
    out.push([key, value instanceof Date ? value.toISOString() : String(value)])
  }
  for (const condition of filter.match ?? []) out.push(fieldFilterParam(condition))
  return out
}
