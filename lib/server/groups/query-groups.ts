import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { GroupDto } from '@/lib/shared/schemas/group'
import { HELD_SIGNATURE } from '@/lib/server/pauses/held-row'
import { arrivalSeries, bucketSpan, HOUR_MS } from './arrival-series'

const MINUTE_MS = 60_000

/**
 * A group's messages that are neither replayed nor resolved, from its maintained counters: `count` less
 * `replayed_count` and `resolved_count` (docs/ARCHITECTURE.md#groups-and-counters). Messages being replayed right now
 * are among them until the broker confirms. Only the held group's messages are ever `held`, and they never turn `dead`
 * (a failed release leaves them held), so this is the held count of that group and the dead count of every other
 * one: no counter of its own, and no scan of the messages.
 */
export const UNHANDLED_SQL = 'greatest(g.count - g.replayed_count - g.resolved_count, 0)'

type GroupRow = {
  id: string; title: string; error_type: string | null; signature: string; count: number; first_seen: Date; last_seen: Date
  last5: number; last60: number; sources: string[]; services: string[]; service_versions: string[]; failure_kinds: string[]
  status: string; note: string | null; ticket_url: string | null; replayed_count: number; resolved_count: number
  dead_count: number; held_count: number; top_frames: string[] | null
}

export type GroupQuery = {
  /** Conditions on error_groups `g` (or, restricted, its per-source figures under the same names), numbered against `params`. */
  where: string[]
  params: unknown[]
  orderBy: string
  limit: number
  now: Date
  /** Only these sources' messages count (null: every source, from error_groups and group_arrivals). */
  sourceIds?: string[] | null
}

/**
 * A group as a caller restricted to the sources in parameter `p` sees it: error_groups' own columns, and in place of
 * its counters and facets the sums and unions of its group_source_stats rows in those sources (only groups that have
 * one). `sources` lists the allowed sources the group has failed in.
 */
const scopedGroupsSql = (p: string) => `(
  SELECT s.group_id AS id, eg.title, eg.error_type, eg.signature, eg.status, eg.note, eg.ticket_url, eg.top_frames,
    s.count, s.first_seen, s.last_seen, s.replayed_count, s.resolved_count, s.sources,
    ${['services', 'service_versions', 'failure_kinds']
      .map((column) => `ARRAY(SELECT DISTINCT v FROM group_source_stats x CROSS JOIN unnest(x.${column}) v
      WHERE x.group_id = s.group_id AND x.source_id = ANY(${p}) ORDER BY 1) AS ${column}`)
      .join(',\n    ')}
  FROM (
    SELECT st.group_id, sum(st.count) AS count, min(st.first_seen) AS first_seen, max(st.last_seen) AS last_seen,
      sum(st.replayed_count) AS replayed_count, sum(st.resolved_count) AS resolved_count,
      array_agg(DISTINCT src.queue ORDER BY src.queue) AS sources
    FROM group_source_stats st JOIN sources src ON src.id = st.source_id
    WHERE st.source_id = ANY(${p})
    GROUP BY st.group_id
  ) s
  JOIN error_groups eg ON eg.id = s.group_id
)`

/**
 * Groups with the counters maintained at ingestion and as message status changes, rates, a 24-hour sparkline (per
 * hour) and a one-hour one (per minute) from the arrival buckets; for a restricted caller, the same from the
 * per-source counters and buckets of the allowed sources. `where` and `orderBy` may name `dead_count`.
 */
export async function queryGroups({ sql, ...query }: GroupQuery & { sql: Sql }): Promise<GroupDto[]> {
  const sourceIds = query.sourceIds ?? null
  if (sourceIds?.length === 0) return []
  const params = [...query.params, query.now, query.limit]
  const now = `date_trunc('minute', $${params.length - 1}::timestamptz)`
  const limit = `$${params.length}`
  let groups = 'error_groups g'
  let arrivals = 'group_arrivals a WHERE a.group_id = g.id'
  if (sourceIds) {
    const p = `$${params.push(sourceIds)}::bigint[]`
    groups = `${scopedGroupsSql(p)} g`
    arrivals = `group_source_arrivals a WHERE a.group_id = g.id AND a.source_id = ANY(${p})`
  }
  const { rows } = await sql.query<GroupRow>(
    `SELECT g.id::text, g.title, g.error_type, g.signature, g.count::float8 AS count, g.first_seen, g.last_seen,
       COALESCE(r.last5, 0)::float8 / 5 AS last5, COALESCE(r.last60, 0)::float8 / 60 AS last60,
       g.sources, g.services, g.service_versions, g.failure_kinds, g.status, g.note, g.ticket_url,
       g.replayed_count::float8 AS replayed_count, g.resolved_count::float8 AS resolved_count, g.top_frames,
       dead_count::float8 AS dead_count, held_count::float8 AS held_count
     FROM ${groups}
     CROSS JOIN LATERAL (
       SELECT CASE WHEN g.signature = '${HELD_SIGNATURE}' THEN 0 ELSE ${UNHANDLED_SQL} END AS dead_count,
         CASE WHEN g.signature = '${HELD_SIGNATURE}' THEN ${UNHANDLED_SQL} ELSE 0 END AS held_count
     ) c
     LEFT JOIN LATERAL (
       SELECT sum(a.count) FILTER (WHERE a.minute >= ${now} - interval '4 minutes') AS last5, sum(a.count) AS last60
       FROM ${arrivals} AND a.minute >= ${now} - interval '59 minutes'
     ) r ON TRUE
     WHERE ${query.where.length ? query.where.join(' AND ') : 'TRUE'}
     ORDER BY ${query.orderBy}, g.id DESC LIMIT ${limit}`,
    params,
  )
  const groupIds = rows.map((r) => r.id)
  const [sparklines, lastHour] = await Promise.all([
    arrivalSeries({ sql, groupIds, span: bucketSpan(query.now, HOUR_MS, 24), sourceIds }),
    arrivalSeries({ sql, groupIds, span: bucketSpan(query.now, MINUTE_MS, 60), sourceIds }),
  ])
  return rows.map((r) => ({
    id: r.id, title: r.title, errorType: r.error_type, signature: r.signature, count: r.count,
    firstSeen: new Date(r.first_seen).toISOString(), lastSeen: new Date(r.last_seen).toISOString(),
    ratePerMinute: { last5: round(r.last5), last60: round(r.last60) },
    sparkline: sparklines.get(r.id) ?? [],
    sparklineHour: lastHour.get(r.id) ?? [],
    sources: r.sources, services: r.services, serviceVersions: r.service_versions, failureKinds: r.failure_kinds,
    status: r.status, note: r.note, ticketUrl: r.ticket_url,
    replayedCount: r.replayed_count, resolvedCount: r.resolved_count, deadCount: r.dead_count, heldCount: r.held_count,
    topFrames: r.top_frames ?? [],
  }))
}

const round = (n: number) => Math.round(n * 100) / 100
