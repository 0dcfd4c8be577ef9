/** GET /api/summary: the dashboard's header numbers, all from maintained counters. */
export type SummaryDto = {
  /** Dead letters stored (the sum of the sources' drained counters). */
  stored: number
  /** Arrivals over the last 60 minutes, the window of ratePerMinute.last60. */
  arrivalsLastHour: number
  /** Error groups holding at least one message. */
  groups: number
  sources: SummarySourceDto[]
  /** The drainer of this process, or null when this process does not drain (LAZARUS_RUN_WORKERS=0). */
  drainer: { state: string; brokerError: string | null } | null
  /** Why queue depths are missing, when the management API did not answer. */
  brokerError: string | null
}

export type SummarySourceDto = {
  id: string
  vhost: string
  queue: string
  enabled: boolean
  depth: number | null
  drained: number
  lastDrainAt: string | null
  error: string | null
}
