import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { GroupListDto, GroupSort, GroupView, ListGroupsQuery } from '@/lib/shared/schemas/group'
import { HELD_SIGNATURE } from '@/lib/server/pauses/held-row'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { queryGroups, UNHANDLED_SQL } from './query-groups'

const ORDER: Record<GroupSort, string> = { dead: 'dead_count DESC, g.last_seen DESC', count: 'g.count DESC', rate: 'last5 DESC, last60 DESC', lastSeen: 'g.last_seen DESC' }
/** From the maintained counters, like the sorts: one row per group is read either way. */
const VIEW: Record<GroupView, string | null> = { attention: `${UNHANDLED_SQL} > 0`, handled: `${UNHANDLED_SQL} = 0`, all: null }

export type ListGroupsOptions = { db: Db; query: ListGroupsQuery; now?: Date } & SourceScope

/**
 * Groups that hold messages, filtered on their maintained facets (one row per error signature: a short scan). With
 * `scope.sourceIds`, only groups with messages in those sources, their counts, rates, facets and sources limited to
 * them (every filter and sort applies to those figures). The view keeps the groups with something left to do
 * (`attention`), those without (`handled`), or all.
 */
export async function listGroups({ db, query, now = new Date(), ...scope }: ListGroupsOptions): Promise<GroupListDto> {
  const params: unknown[] = []
  const where: string[] = ['g.count > 0']
  const add = (clause: (p: string) => string, value: unknown) => {
    params.push(value)
    where.push(clause(`$${params.length}`))
  }
  // Held messages are parked, not failing: their group stays out of the triage list unless asked for.
  if (!query.includeHeld) add((p) => `g.signature <> ${p}`, HELD_SIGNATURE)
  if (query.source) add((p) => `${p} = ANY(g.sources)`, query.source)
  const view = VIEW[query.view ?? 'all']
  if (view) where.push(view)
  if (query.status) add((p) => `g.status = ${p}`, query.status)
  if (query.failureKind) add((p) => `${p} = ANY(g.failure_kinds)`, query.failureKind)
  if (query.service) add((p) => `${p} = ANY(g.services)`, query.service)
  if (query.from) add((p) => `g.last_seen >= ${p}::timestamptz`, query.from)
  if (query.to) add((p) => `g.first_seen < ${p}::timestamptz`, query.to)
  const groups = await queryGroups({ sql: db.sql, where, params, orderBy: ORDER[query.sort], limit: query.limit, now, sourceIds: allowedSourceIds(scope) })
  return { groups }
}
