import 'server-only'
import type { Sql } from '@/lib/server/db/sql'
import type { GroupDto } from '@/lib/shared/schemas/group'
import { arrivalSeries, bucketSpan, HOUR_MS } from './arrival-series'

type GroupRow = {
  id: string; title: string; error_type: string | null; signature: string; count: number; first_seen: Date; last_seen: Date
  last5: number; last60: number; sources: string[]; services: string[]; service_versions: string[]; failure_kinds: string[]
  status: string; note: string | null; ticket_url: string | null; replayed_count: number; resolved_count: number
}

export type GroupQuery = {
  /** Conditions on error_groups `g`, numbered against `params`. */
  where: string[]
  params: unknown[]
  orderBy: string
  limit: number
  now: Date
}

/** Groups with the counters maintained at ingestion, rates and a 24-hour sparkline from the arrival buckets. */
export async function queryGroups(sql: Sql, query: GroupQuery): Promise<GroupDto[]> {
  const params = [...query.params, query.now, query.limit]
  const now = `date_trunc('minute', $${params.length - 1}::timestamptz)`
  const { rows } = await sql.query<GroupRow>(
    `SELECT g.id::text, g.title, g.error_type, g.signature, g.count::float8 AS count, g.first_seen, g.last_seen,
       COALESCE(r.last5, 0)::float8 / 5 AS last5, COALESCE(r.last60, 0)::float8 / 60 AS last60,
       g.sources, g.services, g.service_versions, g.failure_kinds, g.status, g.note, g.ticket_url,
       g.replayed_count::float8 AS replayed_count, g.resolved_count::float8 AS resolved_count
     FROM error_groups g
     LEFT JOIN LATERAL (
       SELECT sum(a.count) FILTER (WHERE a.minute >= ${now} - interval '4 minutes') AS last5, sum(a.count) AS last60
       FROM group_arrivals a WHERE a.group_id = g.id AND a.minute >= ${now} - interval '59 minutes'
     ) r ON TRUE
     WHERE ${query.where.length ? query.where.join(' AND ') : 'TRUE'}
     ORDER BY ${query.orderBy}, g.id DESC LIMIT $${params.length}`,
    params,
  )
  const sparklines = await arrivalSeries(sql, rows.map((r) => r.id), bucketSpan(query.now, HOUR_MS, 24))
  return rows.map((r) => ({
    id: r.id, title: r.title, errorType: r.error_type, signature: r.signature, count: r.count,
    firstSeen: new Date(r.first_seen).toISOString(), lastSeen: new Date(r.last_seen).toISOString(),
    ratePerMinute: { last5: round(r.last5), last60: round(r.last60) },
    sparkline: sparklines.get(r.id) ?? [],
    sources: r.sources, services: r.services, serviceVersions: r.service_versions, failureKinds: r.failure_kinds,
    status: r.status, note: r.note, ticketUrl: r.ticket_url,
    replayedCount: r.replayed_count, resolvedCount: r.resolved_count,
  }))
}

const round = (n: number) => Math.round(n * 100) / 100
