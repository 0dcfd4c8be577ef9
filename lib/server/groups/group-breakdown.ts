import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { BreakdownEntryDto, GroupDetailDto } from '@/lib/shared/schemas/group'

/**
 * Most recent messages a breakdown counts: even as an index-only scan, a big group's full GROUP BY would take seconds
 * (docs/ARCHITECTURE.md#counters-instead-of-counting).
 */
export const BREAKDOWN_ROW_CAP = 100_000

type BreakdownRow = {
  dimension: 'source' | 'service' | 'version' | 'kind' | 'scanned'
  value: string | null
  source_id: string | null
  count: number
}

export type GroupBreakdown = Pick<GroupDetailDto, 'breakdown' | 'breakdownSampled' | 'breakdownRows'>

/**
 * Counts per source, service, service version and failure kind over the group's most recent messages, read
 * from dead_letters_group_idx alone (it includes the four columns). The messages are first counted per combination
 * of the four (one hash lookup a message; a group has few combinations), and the grouping sets add up those:
 * grouping sets straight over the messages look each one up in four hashes (figures: CHANGELOG.md).
 */
export type GroupBreakdownOptions = { sql: Sql; group: { id: string; count: number }; cap?: number; sourceIds?: string[] | null }

/**
 * A caller restricted to `sourceIds` sees the same window of the group's `cap` most recent messages (the same
 * index-only scan, so it costs what the unrestricted breakdown costs), counting only the allowed sources'. Walking on
 * until `cap` allowed messages were found would read the whole group when they are a small share of it (figures:
 * CHANGELOG.md). For such a caller `group.count` is the allowed sources' count.
 */
export async function groupBreakdown({ sql, group, cap = BREAKDOWN_ROW_CAP, sourceIds = null }: GroupBreakdownOptions): Promise<GroupBreakdown> {
  const { rows } = await sql.query<BreakdownRow>(
    `WITH recent AS (
       SELECT source_id, service, service_version, failure_kind FROM dead_letters
       WHERE group_id = $1::bigint ORDER BY failed_at DESC, id DESC LIMIT $2
     ), combinations AS (
       SELECT source_id, service, service_version, failure_kind, count(*) AS count
       FROM recent GROUP BY source_id, service, service_version, failure_kind
     ), counted AS (
       SELECT CASE WHEN GROUPING(source_id) = 0 THEN 'source' WHEN GROUPING(service) = 0 THEN 'service'
                   WHEN GROUPING(service_version) = 0 THEN 'version' ELSE 'kind' END AS dimension,
         source_id, service, service_version, failure_kind, sum(count)::float8 AS count
       FROM combinations WHERE $3::bigint[] IS NULL OR source_id = ANY($3::bigint[])
       GROUP BY GROUPING SETS ((source_id), (service), (service_version), (failure_kind))
     )
     SELECT c.dimension, c.source_id::text,
       CASE c.dimension WHEN 'source' THEN s.queue WHEN 'service' THEN c.service WHEN 'version' THEN c.service_version ELSE c.failure_kind END AS value,
       c.count
     FROM counted c LEFT JOIN sources s ON c.dimension = 'source' AND s.id = c.source_id
     UNION ALL
     SELECT 'scanned', NULL, NULL, coalesce(sum(count), 0)::float8 FROM combinations
     ORDER BY count DESC, value NULLS LAST`,
    [group.id, cap, sourceIds],
  )
  const scanned = rows.find((r) => r.dimension === 'scanned')?.count ?? 0
  const breakdown = toBreakdown(rows)
  const counted = breakdown.failureKinds.reduce((sum, entry) => sum + entry.count, 0)
  return {
    breakdown,
    // The group's maintained count tells a group of exactly `cap` messages from a bigger one.
    breakdownSampled: scanned >= cap && group.count > counted,
    breakdownRows: counted,
  }
}

function toBreakdown(rows: BreakdownRow[]): GroupBreakdown['breakdown'] {
  const of = (dimension: BreakdownRow['dimension']): BreakdownEntryDto[] =>
    rows.filter((r) => r.dimension === dimension).map((r) => ({ value: r.value, count: r.count }))
  return {
    sources: rows.filter((r) => r.dimension === 'source').map((r) => ({ id: r.source_id ?? '', value: r.value, count: r.count })),
    services: of('service'),
    serviceVersions: of('version'),
    failureKinds: of('kind'),
  }
}
