import type { GroupDto } from '@/lib/shared/schemas/group'
import type { MessageDetailDto, MessageSummaryDto } from '@/lib/shared/schemas/message'

/*
 * The API shapes the pages read. Fields added by newer endpoints are optional here on purpose: a page
 * rendered against an older server shows less, it does not crash.
 */

export type GroupItem = GroupDto & { sparkline?: number[] }

export type GroupsResponse = { groups: GroupItem[] }

/** A breakdown entry; `value` is null for messages without one (no service version, say). */
export type Facet = { value: string | null; count: number; id?: string }

export type GroupDetailResponse = {
  group: GroupItem
  /** Bucket width of `arrivals`: hours for 24h and 7d, days for 30d. */
  bucket?: 'hour' | 'day'
  arrivals?: { t: string; count: number }[]
  breakdown?: { sources?: Facet[]; services?: Facet[]; serviceVersions?: Facet[]; failureKinds?: Facet[] }
  breakdownSampled?: boolean
}

export type SummarySource = { id: string; queue: string; depth: number | null; drained: number; lastDrainAt: string | null; error: string | null }

export type SummaryResponse = {
  stored: number
  arrivalsLastHour: number
  groups: number
  sources: SummarySource[]
  drainer: { state: string } | null
  brokerError: string | null
}

export type MessageItem = MessageSummaryDto & { bodyPreview?: string | null }

export type MessagesPage = { messages: MessageItem[]; nextCursor: string | null }

export type MessageCount = { count: number; estimated: boolean }

export type MessageDetail = MessageDetailDto & {
  related?: { sameGroup?: MessageItem[]; sameEntity?: MessageItem[] }
}
