import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { runningEngines, type RunningEngines } from '@/lib/server/platform/process/composition'
import { listSources } from '@/lib/server/sources/list-sources'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { SourceDto } from '@/lib/shared/schemas/source'
import type { SummaryDto } from '@/lib/shared/schemas/summary'

/** The header must not hang on a slow broker: past this, sources come without depth and brokerError says why. */
const DEPTH_TIMEOUT_MS = 1_000

export type GetSummaryOptions = {
  db: Db
  /** The composition root's running engines, whose drainer state the header shows (null: none run in this process). */
  engines: Promise<RunningEngines> | null
  now?: Date
  depthTimeoutMs?: number
} & SourceScope

type Counters = { stored: number; arrivals_last_hour: number; groups: number }

/**
 * Header numbers from maintained counters only: no count(*) over dead_letters, whatever its size. With `sourceIds`,
 * only those sources: their stored counts, their groups and arrivals (per-source counters), and only them listed.
 */
export async function getSummary({ db, engines, now = new Date(), depthTimeoutMs = DEPTH_TIMEOUT_MS, ...scope }: GetSummaryOptions): Promise<SummaryDto> {
  const { sql } = db
  const sourceIds = allowedSourceIds(scope)
  const [counters, allSources, background] = await Promise.all([
    sourceIds ? scopedCounters({ sql, now, sourceIds }) : sql.query<Counters>(
      `SELECT (SELECT coalesce(sum(drained_count), 0)::float8 FROM sources) AS stored,
         -- Naming every group turns this into one short index-only range per group instead of a scan of every bucket.
         (SELECT coalesce(sum(count), 0)::float8 FROM group_arrivals
           WHERE group_id = ANY(ARRAY(SELECT id FROM error_groups))
             AND minute >= date_trunc('minute', $1::timestamptz) - interval '59 minutes') AS arrivals_last_hour,
         (SELECT count(*)::int FROM error_groups WHERE count > 0) AS groups`,
      [now],
    ),
    sourcesWithDepth({ db, timeoutMs: depthTimeoutMs }),
    runningEngines({ engines }),
  ])
  const allowed = sourceIds && new Set(sourceIds)
  const sources = allowed ? { ...allSources, sources: allSources.sources.filter((s) => allowed.has(s.id)) } : allSources
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
 * The counters of the sources in `sourceIds`: the allowed (group, source) pairs first (group_source_stats_source_idx),
 * then one index-only range of each pair's last hour of buckets.
 */
async function scopedCounters({ sql, now, sourceIds }: { sql: Sql; now: Date; sourceIds: string[] }): Promise<{ rows: Counters[] }> {
  return sql.query<Counters>(
    `SELECT (SELECT coalesce(sum(drained_count), 0)::float8 FROM sources WHERE id = ANY($2::bigint[])) AS stored,
       (SELECT coalesce(sum(a.count), 0)::float8 FROM group_source_stats p
         JOIN group_source_arrivals a ON a.group_id = p.group_id AND a.source_id = p.source_id
           AND a.minute >= date_trunc('minute', $1::timestamptz) - interval '59 minutes'
         WHERE p.source_id = ANY($2::bigint[])) AS arrivals_last_hour,
       (SELECT count(*)::int FROM (
         SELECT group_id FROM group_source_stats WHERE source_id = ANY($2::bigint[]) GROUP BY group_id HAVING sum(count) > 0
       ) g) AS groups`,
    [now, sourceIds],
  )
}

/**
 * The sources from the database, with depths if the management API answers within `timeoutMs` of them: the wait
 * starts once the database has answered, so a slow first query (embedded mode warming up) is not blamed on the broker.
 */
async function sourcesWithDepth({ db, timeoutMs }: { db: Db; timeoutMs: number }): Promise<{ sources: SourceDto[]; brokerError: string | null }> {
  const withDepth = listSources({ db })
  // Settled later if the timeout wins; its failure then has nobody to report to.
  withDepth.catch(() => {})
  const { sources } = await listSources({ db, withDepth: false })
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
