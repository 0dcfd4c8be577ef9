import 'server-only'
import { getDb } from '@/lib/server/db'
import { currentBackground } from '@/lib/server/runtime/background'
import { listSources } from '@/lib/server/sources/list-sources'
import type { SourceDto } from '@/lib/shared/schemas/source'
import type { SummaryDto } from '@/lib/shared/schemas/summary'

/** The header must not hang on a slow broker: past this, sources come without depth and brokerError says why. */
const DEPTH_TIMEOUT_MS = 1_000

export type GetSummaryOptions = { now?: Date; depthTimeoutMs?: number }

/** Header numbers from maintained counters only: no count(*) over dead_letters, whatever its size. */
export async function getSummary({ now = new Date(), depthTimeoutMs = DEPTH_TIMEOUT_MS }: GetSummaryOptions = {}): Promise<SummaryDto> {
  const { sql } = await getDb()
  const [counters, sources, background] = await Promise.all([
    sql.query<{ stored: number; arrivals_last_hour: number; groups: number }>(
      `SELECT (SELECT coalesce(sum(drained_count), 0)::float8 FROM sources) AS stored,
         -- Naming every group turns this into one short index-only range per group instead of a scan of every bucket.
         (SELECT coalesce(sum(count), 0)::float8 FROM group_arrivals
           WHERE group_id = ANY(ARRAY(SELECT id FROM error_groups))
             AND minute >= date_trunc('minute', $1::timestamptz) - interval '59 minutes') AS arrivals_last_hour,
         (SELECT count(*)::int FROM error_groups WHERE count > 0) AS groups`,
      [now],
    ),
    sourcesWithDepth(depthTimeoutMs),
    currentBackground(),
  ])
  const status = background?.drainer.status()
  return {
    stored: counters.rows[0]?.stored ?? 0,
    arrivalsLastHour: counters.rows[0]?.arrivals_last_hour ?? 0,
    groups: counters.rows[0]?.groups ?? 0,
    sources: sources.sources.map((s) => ({
      id: s.id, vhost: s.vhost, queue: s.queue, enabled: s.enabled, depth: s.depth, drained: s.drained, lastDrainAt: s.lastDrainAt, error: s.error,
    })),
    drainer: status ? { state: status.state, brokerError: status.brokerError } : null,
    brokerError: sources.brokerError,
  }
}

/**
 * The sources from the database, with depths if the management API answers within `timeoutMs` of them: the wait
 * starts once the database has answered, so a slow first query (embedded mode warming up) is not blamed on the broker.
 */
async function sourcesWithDepth(timeoutMs: number): Promise<{ sources: SourceDto[]; brokerError: string | null }> {
  const withDepth = listSources()
  // Settled later if the timeout wins; its failure then has nobody to report to.
  withDepth.catch(() => {})
  const { sources } = await listSources({ withDepth: false })
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs)
  })
  try {
    return (await Promise.race([withDepth, timedOut])) ?? { sources, brokerError: `management API did not answer within ${timeoutMs} ms` }
  } finally {
    clearTimeout(timer)
  }
}
