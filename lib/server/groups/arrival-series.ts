import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

export const HOUR_MS = 3_600_000
export const DAY_MS = 86_400_000

/** `buckets` consecutive clock-aligned (UTC) buckets of `bucketMs`, the last one holding `now`. */
export type BucketSpan = { start: Date; bucketMs: number; buckets: number }

export function bucketSpan(now: Date, bucketMs: number, buckets: number): BucketSpan {
  const current = Math.floor(now.getTime() / bucketMs) * bucketMs
  return { start: new Date(current - (buckets - 1) * bucketMs), bucketMs, buckets }
}

export function bucketStarts(span: BucketSpan): Date[] {
  return Array.from({ length: span.buckets }, (_, i) => new Date(span.start.getTime() + i * span.bucketMs))
}

/**
 * Arrivals per group and bucket, summed from the per-minute buckets the drainer maintains, for all groups in
 * one query: one index-only range of the primary key (group_id, minute) INCLUDE (count) per group. With `sourceIds`
 * (a restricted caller) only those sources' buckets count: one range of group_source_arrivals' primary key
 * (group_id, source_id, minute) INCLUDE (count) per group and allowed source.
 * Every group gets a dense series, zeros included, oldest bucket first.
 */
export type ArrivalSeriesOptions = { sql: Sql; groupIds: string[]; span: BucketSpan; sourceIds?: string[] | null }

export async function arrivalSeries({ sql, groupIds, span, sourceIds = null }: ArrivalSeriesOptions): Promise<Map<string, number[]>> {
  const series = new Map(groupIds.map((id) => [id, new Array<number>(span.buckets).fill(0)]))
  if (groupIds.length === 0 || sourceIds?.length === 0) return series
  const end = new Date(span.start.getTime() + span.buckets * span.bucketMs)
  const params: unknown[] = [groupIds, span.start, end, `${span.bucketMs / 1000} seconds`]
  const { rows } = await sql.query<{ group_id: string; bucket: Date; count: number }>(
    `SELECT group_id::text, bucket, count FROM (
       SELECT group_id, date_bin($4::interval, minute, $2::timestamptz) AS bucket, sum(count)::float8 AS count
       FROM ${sourceIds ? 'group_source_arrivals' : 'group_arrivals'}
       WHERE group_id = ANY($1::bigint[])${sourceIds ? ` AND source_id = ANY($${params.push(sourceIds)}::bigint[])` : ''} AND minute >= $2::timestamptz AND minute < $3::timestamptz
       GROUP BY 1, 2
     ) per_bucket`,
    params,
  )
  for (const row of rows) {
    const counts = series.get(row.group_id)
    const index = Math.round((new Date(row.bucket).getTime() - span.start.getTime()) / span.bucketMs)
    if (counts && index >= 0 && index < span.buckets) counts[index] += row.count
  }
  return series
}
