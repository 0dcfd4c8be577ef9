import 'server-only'
import { messageFilterSql, rowSearchTextSql, searchPattern } from './message-filter-sql'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { filterParams, type MessageFilter } from '@/lib/shared/schemas/message-filter'
import type { Selection } from '@/lib/shared/schemas/selection'

/**
 * How a text search (`q`) is matched, and header and property equalities with it (FieldMatching).
 * - `index`: the ids whose search text matches, from dead_letter_search's trigram index and the rows still in the
 *   search backlog (searchMatchesSql); equalities through its header terms (termMatchesSql). For statements that
 *   take the selection as a set (a replay plan, a resolve).
 * - `per-row`: each row's search text evaluated as the statement walks the rows in list order (dead_letter_search
 *   joined LEFT, see SelectionSql.searchJoin), and each row's stored header and property values. An export reads
 *   every match anyway, and one walk in list order is linear where an index lookup per page would repeat the whole
 *   search every page.
 */
export type TextSearch = 'index' | 'per-row'

export type SelectionSqlOptions = {
  selection: Selection
  /** The statement's parameters so far: the clause's values are appended, numbered after them. */
  params: unknown[]
  /** Default `index`. */
  textSearch?: TextSearch
} & SourceScope

export type SelectionSql = {
  /** The WHERE condition over MESSAGES_FROM (`d`, and `st` for a status filter). */
  where: string
  /** What the statement joins after MESSAGES_FROM for `where`: SEARCH_JOIN for a `per-row` text search, else ''. */
  searchJoin: string
}

/** The search rows of MESSAGES_FROM's `d`, for a `per-row` text search; LEFT: rows still in the backlog have none yet. */
export const SEARCH_JOIN = 'LEFT JOIN dead_letter_search ds ON ds.dead_letter_id = d.id'

/**
 * The one place a selection, limited to the sources the caller may see, becomes SQL: for a replay plan, a resolve, an
 * export and its tickets. Values always travel as parameters.
 *
 * - ids: those messages, as long as they are in the caller's sources;
 * - a group: the message-list filter `group`;
 * - a filter: the message list's own condition (messageFilterSql), source scope included, so a selection made from
 *   the list holds exactly the messages the list showed and counted.
 *
 * `sourceIds` absent or null: every source (and no condition for it); an empty list: none.
 */
export function selectionSql({ selection, params, textSearch = 'index', ...scope }: SelectionSqlOptions): SelectionSql {
  const sourceIds = allowedSourceIds(scope)
  if ('ids' in selection) {
    params.push(selection.ids)
    const ids = `d.id = ANY($${params.length}::bigint[])`
    if (!sourceIds) return { where: ids, searchJoin: '' }
    params.push(sourceIds)
    return { where: `${ids} AND d.source_id = ANY($${params.length}::bigint[])`, searchJoin: '' }
  }
  const filter = selectionFilter(selection)
  const arrived = () => {
    let sql = ''
    if (selection.arrivedAfter) {
      params.push(selection.arrivedAfter)
      sql += ` AND d.ingested_at > $${params.length}::timestamptz`
    }
    if (selection.notCopiesOf) {
      // A replayed copy that dead-lettered again carries its item's replay id (lineage_replay_id); replay_items_replay_id_idx.
      params.push(selection.notCopiesOf)
      sql += ` AND (d.lineage_replay_id IS NULL OR NOT EXISTS (SELECT 1 FROM replay_items ri WHERE ri.replay_id = d.lineage_replay_id AND ri.job_id = $${params.length}::bigint))`
    }
    return sql
  }
  if (textSearch === 'index' || !filter.q) {
    const where = messageFilterSql(filter, params, sourceIds, textSearch)
    return { where: where + arrived(), searchJoin: '' }
  }
  const { q, ...rest } = filter
  const where = messageFilterSql(rest, params, sourceIds, 'per-row') + arrived()
  params.push(searchPattern(q))
  return { where: `${where} AND ${rowSearchTextSql('d', 'ds')} ILIKE $${params.length}`, searchJoin: SEARCH_JOIN }
}

/**
 * The message-list filter a selection amounts to: a group is the filter `group`, a list of ids has none. It decides
 * the list order (listOrderSql) and the keyset conditions a selection is read by, page after page.
 */
export function selectionFilter(selection: Selection): MessageFilter {
  if ('filter' in selection) return selection.filter
  return 'groupId' in selection ? { group: selection.groupId } : {}
}

/** A one-line description of a selection for audit summaries. */
/** What an audit entry about a selection is about: its group, its one message, or no single message. */
export function selectionSubject(selection: Selection): { type: 'group' | 'message'; id: string | null } {
  if ('groupId' in selection) return { type: 'group', id: selection.groupId }
  return { type: 'message', id: 'ids' in selection && selection.ids.length === 1 ? selection.ids[0] : null }
}

export function describeSelection(selection: Selection): string {
  if ('ids' in selection) return selection.ids.length === 1 ? `message ${selection.ids[0]}` : `${selection.ids.length} selected messages`
  const since = (selection.arrivedAfter ? ` arrived after ${selection.arrivedAfter}` : '') + (selection.notCopiesOf ? `, not replay ${selection.notCopiesOf}'s own copies` : '')
  if ('groupId' in selection) return `group ${selection.groupId}${since}`
  const parts = filterParams(selection.filter).map(([k, v]) => `${k}=${v}`)
  return (parts.length ? `messages matching ${parts.join(', ')}` : 'all messages') + since
}
