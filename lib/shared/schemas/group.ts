import { z } from 'zod'
import { FROM_BEFORE_TO, fromBeforeTo, isoDateSchema } from './message'

export const GROUP_STATUSES = ['open', 'acknowledged', 'resolved', 'muted'] as const
export const GROUP_RANGES = ['24h', '7d', '30d'] as const

export const listGroupsQuerySchema = z
  .object({
    /** A source's queue name. */
    source: z.string().min(1).max(255).optional(),
    status: z.enum(GROUP_STATUSES).optional(),
    failureKind: z.string().min(1).max(32).optional(),
    service: z.string().min(1).max(256).optional(),
    /** Groups active in [from, to): lastSeen >= from and firstSeen < to. */
    from: isoDateSchema.optional(),
    to: isoDateSchema.optional(),
    sort: z.enum(['count', 'rate', 'lastSeen']).default('lastSeen'),
    limit: z.coerce.number().int().min(1).max(500).default(200),
  })
  .strict()
  .refine(fromBeforeTo, FROM_BEFORE_TO)

export const groupDetailQuerySchema = z.object({ range: z.enum(GROUP_RANGES).default('24h') }).strict()

export type ListGroupsQuery = z.infer<typeof listGroupsQuerySchema>
export type GroupRange = (typeof GROUP_RANGES)[number]

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
  sources: string[]
  services: string[]
  serviceVersions: string[]
  failureKinds: string[]
  status: string
  note: string | null
  ticketUrl: string | null
}

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
