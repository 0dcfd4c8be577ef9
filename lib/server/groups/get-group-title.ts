import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { shortErrorName } from '@/lib/shared/error-name'
import { pageIdSchema } from '@/lib/shared/page-params'
import { queryGroups } from './query-groups'

export type GetGroupTitleOptions = { db: Db; id: string; now?: Date } & SourceScope

/**
 * What a group's browser tab is called: "#249 · InvalidOperationException" (the error type's last name, else the
 * title's start); "#249" alone for a group the caller cannot see or that does not exist, which says nothing about it.
 */
export async function getGroupTitle({ db: { sql }, id, now = new Date(), ...scope }: GetGroupTitleOptions): Promise<string> {
  const groupId = pageIdSchema.safeParse(id)
  if (!groupId.success) return 'Group'
  const sourceIds = allowedSourceIds(scope)
  const where = sourceIds ? ['g.id = $1::bigint', 'g.count > 0'] : ['g.id = $1::bigint']
  const [group] = await queryGroups({ sql, where, params: [groupId.data], orderBy: 'g.id', limit: 1, now, sourceIds })
  if (!group) return `#${groupId.data}`
  return `#${groupId.data} · ${shortErrorName(group.errorType, group.title)}`
}
