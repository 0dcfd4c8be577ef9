import { z } from 'zod'
import { FROM_BEFORE_TO, fromBeforeTo, isoDateSchema, text } from './fields'

export const GROUP_STATUSES = ['open', 'acknowledged', 'resolved', 'muted'] as const
export const GROUP_RANGES = ['24h', '7d', '30d'] as const
/**
 * Which groups the list shows by what is left to do: `attention`, those with messages neither replayed nor resolved
 * (dead, or held in the held group); `handled`, those without; `all`, both.
 */
export const GROUP_VIEWS = ['attention', 'handled', 'all'] as const
export const GROUP_SORTS = ['dead', 'count', 'rate', 'lastSeen'] as const

export const listGroupsQuerySchema = z
  .object({
    /** A source's queue name. */
    source: text().min(1).max(255).optional(),
    status: z.enum(GROUP_STATUSES).optional(),
    failureKind: text().min(1).max(32).optional(),
    service: text().min(1).max(256).optional(),
    /** Groups active in [from, to): lastSeen >= from and firstSeen < to. */
    from: isoDateSchema.optional(),
    to: isoDateSchema.optional(),
    /** Absent: `all`, as before views existed (docs/ARCHITECTURE.md#the-api-contract); the groups page asks for `attention`. */
    view: z.enum(GROUP_VIEWS).optional(),
    sort: z.enum(GROUP_SORTS).default('lastSeen'),
    limit: z.coerce.number().int().min(1).max(500).default(200),
    /** The "Held while paused" group (messages pause guards parked) is hidden unless this is true. */
    includeHeld: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
  })
  .strict()
  .refine(fromBeforeTo, FROM_BEFORE_TO)

export const groupDetailQuerySchema = z.object({ range: z.enum(GROUP_RANGES).default('24h') }).strict()

// PATCH /api/groups/{id}: an operator's triage state. null clears the note or the ticket link.
export const updateGroupSchema = z
  .object({
    status: z.enum(GROUP_STATUSES).optional(),
    note: text().max(10_000).nullable().optional(),
    ticketUrl: text()
      .trim()
      .max(2048)
      .url('must be a URL such as https://tracker.example.com/PROJ-123')
      .refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL')
      .nullable()
      .optional(),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, 'give at least one of status, note, ticketUrl')
export type UpdateGroupInput = z.infer<typeof updateGroupSchema>

export type ListGroupsQuery = z.infer<typeof listGroupsQuerySchema>
export type GroupRange = (typeof GROUP_RANGES)[number]
export type GroupView = (typeof GROUP_VIEWS)[number]
export type GroupSort = (typeof GROUP_SORTS)[number]

export type GroupDto = {
  id: string
  title: string
  errorType: string | null
  signature: string
  count: number
  firstSeen: string
  lastSeen: string
  ratePerMinute: { last5: number; last60: number }
  /** Arrivals per clock hour (UTC) over the last 24 hours, oldest first; the last entry is the current hour so far. */
  sparkline: number[]
  /** Arrivals per minute over the last hour, oldest first; the last entry is the current minute so far. */
  sparklineHour: number[]
  sources: string[]
  services: string[]
  serviceVersions: string[]
  failureKinds: string[]
  status: string
  note: string | null
  ticketUrl: string | null
  /** Messages of the group replayed (acked by the broker) and resolved, maintained as their status changes. */
  replayedCount: number
  resolvedCount: number
  /**
   * Messages still to handle, from the same counters: `count` less replayed and resolved. Dead ones (messages being
   * replayed included, until the broker confirms) in every group but the held one, where they are held.
   */
  deadCount: number
  heldCount: number
  /**
   * The stack frames the group's signature hashed (`module.function`, throw site first;
   * docs/framework-headers.md#the-fingerprint): what tells apart groups whose titles read the same. Empty for groups
   * without frames, and for groups created before Lazarus stored them.
   */
  topFrames: string[]
}

/** GET /api/groups */
export type GroupListDto = { groups: GroupDto[] }

export type ArrivalBucketDto = { t: string; count: number }
export type BreakdownEntryDto = { value: string | null; count: number }

export type GroupDetailDto = {
  group: GroupDto
  range: GroupRange
  /** Width of each arrivals bucket: hours for 24h and 7d, UTC days for 30d. */
  bucket: 'hour' | 'day'
  /** Every bucket of the range, oldest first, zeros included; `t` is the bucket's start. */
  arrivals: ArrivalBucketDto[]
  /** Counts over the group's stored messages (the most recent ones when `breakdownSampled`). */
  breakdown: {
    sources: (BreakdownEntryDto & { id: string })[]
    services: BreakdownEntryDto[]
    serviceVersions: BreakdownEntryDto[]
    failureKinds: BreakdownEntryDto[]
  }
  breakdownSampled: boolean
  /** How many messages the breakdown counted. */
  breakdownRows: number
}
