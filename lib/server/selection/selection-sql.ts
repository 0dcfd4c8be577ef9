import 'server-only'
import { messageFilterSql } from '@/lib/server/messages/message-filter-sql'
import type { Selection } from '@/lib/shared/schemas/selection'

/**
 * The WHERE condition for a replay or resolve selection over MESSAGES_FROM (`d`, `st`): explicit ids, a whole group,
 * or the filters of GET /api/messages. Values travel as parameters appended to `params`.
 */
export function selectionSql(selection: Selection, params: unknown[]): string {
  if ('ids' in selection) {
    params.push(selection.ids)
    return `d.id = ANY($${params.length}::bigint[])`
  }
  if ('groupId' in selection) {
    params.push(selection.groupId)
    return `d.group_id = $${params.length}::bigint`
  }
  return messageFilterSql(selection.filter, params)
}

/** A one-line description of a selection for audit summaries. */
export function describeSelection(selection: Selection): string {
  if ('ids' in selection) return selection.ids.length === 1 ? `message ${selection.ids[0]}` : `${selection.ids.length} selected messages`
  if ('groupId' in selection) return `group ${selection.groupId}`
  const parts = Object.entries(selection.filter)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v instanceof Date ? v.toISOString() : String(v)}`)
  return parts.length ? `messages matching ${parts.join(', ')}` : 'all messages'
}
