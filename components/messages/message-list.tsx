'use client'

import { useRouter } from 'next/navigation'
import { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore, type ReactNode } from 'react'
import { Button } from '@/components/ui/button'
import { LoadMore } from '@/components/ui/load-more'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { toApiParams } from '@/lib/client/filters'
import { formatCount } from '@/lib/client/format'
import { createSelectionStore, SelectionContext, toBulkSelection, useSelectionState, type BulkSelection, type SelectionStore } from '@/lib/client/selection-store'
import { useMessageCount, useMessages } from '@/lib/client/use-messages'
import { useRowCursor } from '@/lib/client/use-row-cursor'
import type { MessageCountDto } from '@/lib/shared/schemas/message'
import type { QueryParams } from '@/lib/shared/query-keys'
import { MessagesTable } from './messages-table'

type MessageListProps = {
  /** URL-level parameters: filters (a relative `range` included) and an optional `limit`. */
  params: QueryParams
  empty?: ReactNode
  /** Bulk actions for the current selection: what it is, how many it holds (null: not counted) and how to clear it. */
  renderActions?: (selection: BulkSelection, info: SelectionInfo) => ReactNode
}

export type SelectionInfo = { count: number | null; estimated: boolean; clear: () => void }

const countLabel = (count: MessageCountDto | undefined) => (count ? `${count.estimated ? '~' : ''}${formatCount(count.count)}` : null)

function SelectionBar({ store, loadedIds, count, more, filter, renderActions }: { store: SelectionStore; loadedIds: string[]; count: MessageCountDto | undefined; more: boolean; filter: Record<string, string>; renderActions?: MessageListProps['renderActions'] }) {
  const state = useSelectionState()
  const selection = toBulkSelection(state)
  const pageSelected = !state.all && loadedIds.length > 0 && loadedIds.every((id) => state.ids.has(id))
  const matching = countLabel(count)
  const canSelectAll = pageSelected && (more || (count ? count.count > loadedIds.length : false))

  if (!selection) return null
  return (
    <div role="status" className="flex h-9 min-w-0 items-center gap-3 overflow-hidden bg-amber-50 px-3 whitespace-nowrap text-amber-950">
      {state.all ? (
        <span data-testid="selection-summary" className="truncate">
          All <strong className="tabular-nums">{matching ?? 'matching'}</strong> messages matching this filter are selected.
        </span>
      ) : (
        <span data-testid="selection-summary" className="truncate">
          <strong className="tabular-nums">{formatCount(state.ids.size)}</strong> selected
          {pageSelected && ` (all ${formatCount(loadedIds.length)} loaded)`}.
        </span>
      )}
      {canSelectAll && (
        <Button variant="ghost" className="text-brand hover:text-brand" onClick={() => store.selectAllMatching(filter, count?.count ?? null, count?.estimated ?? false)}>
          Select all {matching ?? ''} matching
        </Button>
      )}
      <Button variant="ghost" onClick={() => store.clear()}>
        Clear selection
      </Button>
      {renderActions && (
        <div className="ml-auto flex items-center gap-2">
          {renderActions(selection, {
            count: state.all ? (count?.count ?? state.all.count) : state.ids.size,
            estimated: state.all ? (count?.estimated ?? state.all.estimated) : false,
            clear: () => store.clear(),
          })}
        </div>
      )}
    </div>
  )
}

/** The message list with keyset "Load more", selection (rows, shift ranges, page, all matching) and keys. */
export function MessageList({ params, empty, renderActions }: MessageListProps) {
  const router = useRouter()
  const query = useMessages(params)
  const count = useMessageCount(params)
  const [store] = useState(createSelectionStore)

  const messages = useMemo(() => query.data?.pages.flatMap((p) => p.messages) ?? [], [query.data])
  const ids = useMemo(() => messages.map((m) => m.id), [messages])
  const idsRef = useRef(ids)
  useEffect(() => {
    idsRef.current = ids
  }, [ids])

  // A new filter is a new list: a selection made under the old one would silently mean something else.
  const filterKey = JSON.stringify(params)
  useEffect(() => store.clear(), [filterKey, store])

  const onCheck = useCallback((id: string, shift: boolean) => store.click(id, idsRef.current, shift), [store])
  const onCheckPage = useCallback((selected: boolean) => store.setMany(idsRef.current, selected), [store])
  const cursorStore = useRowCursor({
    count: messages.length,
    onOpen: (i) => messages[i] && router.push(`/messages/${messages[i].id}`),
    onToggle: (i) => messages[i] && store.click(messages[i].id, idsRef.current, false),
  })

  const filterForSelection = useMemo(() => {
    const { limit: _limit, ...rest } = params
    return toApiParams(rest)
  }, [params])

  const matching = countLabel(count.data)
  const stale = query.isPlaceholderData
  const hasSelection = useSyncExternalStore(store.subscribe, () => toBulkSelection(store.getState()) !== null, () => false)

  return (
    <SelectionContext.Provider value={store}>
      <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
        {/* Count and selection share one fixed-height slot: selecting rows never moves the table. */}
        <div className="h-9 border-b border-zinc-100">
          {hasSelection ? (
            <SelectionBar store={store} loadedIds={ids} count={count.data} more={Boolean(query.hasNextPage)} filter={filterForSelection} renderActions={renderActions} />
          ) : (
            <div className="flex h-full items-center gap-3 px-3 text-xs text-zinc-500">
              <span className="tabular-nums" data-testid="message-count">
                {count.error ? `${formatCount(messages.length)}${query.hasNextPage ? '+' : ''} loaded` : matching ? `${matching} matching` : '\u00a0'}
                {matching && messages.length > 0 && <span className="text-zinc-400"> · {formatCount(messages.length)} loaded</span>}
              </span>
              {count.data?.estimated && <span title="Counting every row of a broad filter is slow on large tables, so this is the planner's estimate.">estimated</span>}
              {(query.isFetching || stale) && !query.isFetchingNextPage && !query.isPending && <span className="text-zinc-400">updating…</span>}
            </div>
          )}
        </div>
        {query.error && messages.length === 0 ? (
          <div className="p-3">
            <ErrorState title="Could not load messages" error={query.error} onRetry={() => void query.refetch()} />
          </div>
        ) : (
          <div className={stale ? 'opacity-60 transition-opacity' : undefined}>
            <MessagesTable messages={messages} loading={query.isPending} cursorStore={cursorStore} onCheck={onCheck} onCheckPage={onCheckPage} />
          </div>
        )}
        {!query.isPending && !query.error && messages.length === 0 && <div className="p-4">{empty ?? <EmptyState title="No messages match" />}</div>}
        <LoadMore pages={query} loaded={messages.length} one="message" />
      </div>
    </SelectionContext.Provider>
  )
}
