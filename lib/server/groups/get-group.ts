import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { GroupDetailDto, GroupRange } from '@/lib/shared/schemas/group'
import { arrivalSeries, bucketSpan, bucketStarts, DAY_MS, HOUR_MS, type BucketSpan } from './arrival-series'
import { groupBreakdown } from './group-breakdown'
import { queryGroups } from './query-groups'

const RANGES: Record<GroupRange, { bucket: GroupDetailDto['bucket']; span: (now: Date) => BucketSpan }> = {
  '24h': { bucket: 'hour', span: (now) => bucketSpan(now, HOUR_MS, 24) },
  '7d': { bucket: 'hour', span: (now) => bucketSpan(now, HOUR_MS, 7 * 24) },
  '30d': { bucket: 'day', span: (now) => bucketSpan(now, DAY_MS, 30) },
}

export type GetGroupOptions = { db: Db; id: string; range: GroupRange; now?: Date } & SourceScope

/**
 * One group with its arrivals over the range and where its messages come from. With `sourceIds`, as those sources
 * alone show it, and not found when none of them holds a message of it.
 */
export async function getGroup({ db: { sql }, id, range, now = new Date(), ...scope }: GetGroupOptions): Promise<GroupDetailDto> {
  const groupId = parseId(id, 'group').toString()
  const sourceIds = allowedSourceIds(scope)
  const where = sourceIds ? ['g.id = $1::bigint', 'g.count > 0'] : ['g.id = $1::bigint']
  const [group] = await queryGroups({ sql, where, params: [groupId], orderBy: 'g.id', limit: 1, now, sourceIds })
  if (!group) throw notFound(`group ${id}`)
  const { bucket, span } = RANGES[range]
  const buckets = span(now)
  const [series, breakdown] = await Promise.all([arrivalSeries({ sql, groupIds: [groupId], span: buckets, sourceIds }), groupBreakdown({ sql, group, sourceIds })])
  const counts = series.get(groupId) ?? []
  return {
    group,
    range,
    bucket,
    arrivals: bucketStarts(buckets).map((t, i) => ({ t: t.toISOString(), count: counts[i] ?? 0 })),
    ...breakdown,
  }
}
