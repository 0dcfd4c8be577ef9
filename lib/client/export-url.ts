import { isFieldFilterParam } from '@/lib/shared/schemas/field-filter'
import { MESSAGE_FILTER_KEYS, toApiParams } from './filters'

export type ExportSelection = { ids: readonly string[] } | { groupId: string } | { filter: Record<string, string | undefined> }

/**
 * The download URL of GET /api/export for a selection: explicit ids, a whole group, or the message-list filters as
 * they sit in the page URL (a relative `range` becomes an absolute `from` now; paging and sorting are dropped).
 */
export function exportUrl(format: 'jsonl' | 'csv' | 'md', selection: ExportSelection): string {
  const params = new URLSearchParams({ format })
  if ('ids' in selection) params.set('ids', selection.ids.join(','))
  else if ('groupId' in selection) params.set('group', selection.groupId)
  else {
    const keys = [...MESSAGE_FILTER_KEYS, ...Object.keys(selection.filter).filter(isFieldFilterParam)]
    const filter = toApiParams(Object.fromEntries(keys.map((k) => [k, selection.filter[k]])))
    for (const [key, value] of Object.entries(filter)) if (value) params.set(key, value)
  }
  return `/api/export?${params}`
}
