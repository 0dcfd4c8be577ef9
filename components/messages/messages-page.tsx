'use client'

import { useMemo } from 'react'
import { ExportMenu } from '@/components/export/export-menu'
import { PauseLink } from '@/components/pauses/pause-link'
import { renderSelectionActions } from '@/components/replays/selection-actions'
import { EmptyState } from '@/components/ui/states'
import { MESSAGE_FILTER_KEYS } from '@/lib/client/filters'
import { useUrlState } from '@/lib/client/use-url-state'
import { MessageFilters } from './message-filters'
import { MessageList } from './message-list'

const KEYS = [...MESSAGE_FILTER_KEYS, 'limit'] as const

export function MessagesPage() {
  const { values, fields, update } = useUrlState(KEYS)
  const { limit: _limit, ...rest } = values
  const filters = { ...rest, ...fields }
  const params = useMemo(() => ({ ...values, ...fields }) as Record<string, string>, [values, fields])
  const filtered = Object.keys(filters).length > 0
  return (
    <div className="space-y-3">
      <div className="flex items-center justify-between gap-3">
        <h1 className="text-base font-semibold">Messages</h1>
        <div className="flex items-center gap-2">
          {filters.entity && <PauseLink label="Pause this entity" sourceId={filters.source} entityKey={filters.entity} />}
          <ExportMenu selection={{ filter: filters }} label={filtered ? 'Export matching' : 'Export all'} />
        </div>
      </div>
      <MessageFilters values={rest} fields={fields} update={update} savedViews />
      <MessageList params={params} renderActions={renderSelectionActions} empty={<EmptyState title={filtered ? 'No messages match these filters' : 'No dead letters stored yet'} />} />
    </div>
  )
}
