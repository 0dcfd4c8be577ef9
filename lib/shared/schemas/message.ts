import { z } from 'zod'
import { FROM_BEFORE_TO, fromBeforeTo, text } from './fields'
import { withFieldFilters } from './field-filter'
import { messageFilterSchema } from './message-filter'
import type { MessageReplayDto, ReplayedFromDto } from './replay'
import type { TraceDto } from './trace-settings'

export const listMessagesQuerySchema = withFieldFilters(
  messageFilterSchema
    .extend({
      cursor: text().max(200).optional(),
      limit: z.coerce.number().int().min(1).max(500).default(50),
    })
    .strict()
    .refine(fromBeforeTo, FROM_BEFORE_TO),
)

/** GET /api/messages/count takes exactly the list's filters, without paging. */
export const countMessagesQuerySchema = withFieldFilters(messageFilterSchema.strict().refine(fromBeforeTo, FROM_BEFORE_TO))

export type ListMessagesQuery = z.infer<typeof listMessagesQuerySchema>

/** Header values JSON cannot hold exactly travel tagged (docs/ARCHITECTURE.md#the-api-contract). */
export type ApiHeaderValue = unknown

export type XDeathDto = { queue: string | null; reason: string | null; count: number | null; exchange: string | null; routingKeys: string[]; time: string | null }

export type MessageSummaryDto = {
  id: string
  /** `broker`: where the message failed; a JetStream failure has a subject and stream, no exchange and no x-death. */
  source: { id: string; queue: string; broker: 'rabbitmq' | 'jetstream' }
  status: string
  bodySize: number
  bodyEncoding: string
  /** The first 200 characters of a text or JSON body (null for binary ones); untrusted, render as text. */
  bodyPreview: string | null
  errorType: string | null
  errorMessage: string | null
  failureKind: string
  service: string | null
  serviceVersion: string | null
  framework: string
  entityKey: string | null
  /** The queue it failed in (its last x-death entry's queue), where its entity is paused; null when unknown. */
  originQueue: string | null
  groupId: string
  deathReason: string | null
  attempts: number | null
  failedAt: string
  firstDeathAt: string | null
  ingestedAt: string
  seenCount: number
  flags: string[]
}

/** GET /api/messages, newest failure first. */
export type MessageListDto = { messages: MessageSummaryDto[]; nextCursor: string | null }

export type MessageDetailDto = MessageSummaryDto & {
  /** Shown redacted, as exports are: the caller has no raw access to this message's source (a viewer). */
  redacted?: boolean
  body: { size: number; encoding: string; base64: string; text: string | null; truncated: boolean }
  properties: Record<string, unknown>
  headers: Record<string, ApiHeaderValue>
  headersTyped: Record<string, unknown>
  xDeath: XDeathDto[]
  origin: { exchange: string | null; routingKeys: string[]; queue: string | null }
  delivery: { exchange: string; routingKey: string; redelivered: boolean }
  error: { type: string | null; message: string | null; stack: string | null }
  lastDeathAt: string | null
  groupTitle: string
  lineage: { originId: string | null; replayCount: number }
  /** The trace it belongs to (traceparent, b3 or uber-trace-id; docs/ARCHITECTURE.md#traces), with its link; null: none. */
  trace: TraceDto | null
  /** Status bookkeeping: why it is resolved or why its last replay failed (untrusted when it quotes the broker), when, by whom. */
  statusReason: string | null
  statusChangedAt: string | null
  statusChangedBy: string | null
  /** This message's replays and releases, oldest first. */
  replays: MessageReplayDto[]
  /** Set when this copy died again after a replay ("failed again after replay"): the copy it was replayed from. */
  replayedFrom: ReplayedFromDto | null
  related: {
    /** Up to 5 of the group's most recent other failures, newest first. */
    sameGroup: MessageSummaryDto[]
    /** Up to 10 other failures of the same entity, oldest first (empty when the message has no entity key). */
    sameEntity: MessageSummaryDto[]
  }
}

/**
 * How many messages match a filter. `exact` counts up to the cap; above it the number comes from a maintained
 * counter (`counter`) or the planner's row estimate (`planner`), and `estimated` is true.
 */
export type MessageCountDto = { count: number; estimated: boolean; method: 'exact' | 'counter' | 'planner' }
