import { z } from 'zod'

export const GROUP_STATUSES = ['open', 'acknowledged', 'resolved', 'muted'] as const

export const listGroupsQuerySchema = z
  .object({
    source: z.string().min(1).max(255).optional(),
    status: z.enum(GROUP_STATUSES).optional(),
    failureKind: z.string().min(1).max(32).optional(),
    service: z.string().min(1).max(256).optional(),
    sort: z.enum(['count', 'rate', 'lastSeen']).default('lastSeen'),
    limit: z.coerce.number().int().min(1).max(500).default(200),
  })
  .strict()

export type ListGroupsQuery = z.infer<typeof listGroupsQuerySchema>

export type GroupDto = {
  id: string
  title: string
  errorType: string | null
  signature: string
  count: number
  firstSeen: string
  lastSeen: string
  ratePerMinute: { last5: number; last60: number }
  sources: string[]
  services: string[]
  serviceVersions: string[]
  failureKinds: string[]
  status: string
  note: string | null
  ticketUrl: string | null
}
