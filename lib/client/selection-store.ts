'use client'

import { createContext, useContext, useSyncExternalStore } from 'react'

/**
 * The message selection, outside React state so that toggling one row re-renders that row only. Either explicit ids,
 * or "everything matching this filter" (frozen when bulk actions run, docs/ARCHITECTURE.md#the-frozen-job).
 */
export type SelectionState = {
  ids: ReadonlySet<string>
  /** Set when the whole filter is selected; `ids` is then ignored. */
  all: { filter: Record<string, string>; count: number | null; estimated: boolean } | null
  /** Last row clicked without shift: the other end of a shift-click range. */
  anchor: string | null
}

/** What a bulk action receives. */
export type BulkSelection = { ids: string[] } | { filter: Record<string, string> }

const EMPTY: SelectionState = { ids: new Set(), all: null, anchor: null }

export type SelectionStore = ReturnType<typeof createSelectionStore>

export function createSelectionStore() {
  let state = EMPTY
  const listeners = new Set<() => void>()
  const set = (next: SelectionState) => {
    state = next
    for (const l of listeners) l()
  }
  const isSelected = (id: string) => state.all !== null || state.ids.has(id)

  return {
    subscribe(listener: () => void) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    getState: () => state,
    isSelected,

    /**
     * A click on a row's checkbox. With shift, every row between the anchor and this one takes the clicked
     * row's new state. `visibleIds` are the loaded rows in display order.
     */
    click(id: string, visibleIds: readonly string[], shift: boolean) {
      const selecting = !isSelected(id)
      const ids = new Set(state.all ? visibleIds : state.ids)
      const from = shift && state.anchor ? visibleIds.indexOf(state.anchor) : -1
      const to = visibleIds.indexOf(id)
      const range = from >= 0 && to >= 0 ? visibleIds.slice(Math.min(from, to), Math.max(from, to) + 1) : [id]
      for (const r of range) {
        if (selecting) ids.add(r)
        else ids.delete(r)
      }
      set({ ids, all: null, anchor: id })
    },

    setMany(idsToSet: readonly string[], selected: boolean) {
      const ids = new Set(state.all ? [] : state.ids)
      for (const id of idsToSet) {
        if (selected) ids.add(id)
        else ids.delete(id)
      }
      set({ ids, all: null, anchor: state.anchor })
    },

    selectAllMatching(filter: Record<string, string>, count: number | null, estimated: boolean) {
      set({ ids: new Set(), all: { filter, count, estimated }, anchor: null })
    },

    clear() {
      if (state.ids.size > 0 || state.all || state.anchor) set(EMPTY)
    },
  }
}

export function toBulkSelection(state: SelectionState): BulkSelection | null {
  if (state.all) return { filter: state.all.filter }
  return state.ids.size > 0 ? { ids: [...state.ids] } : null
}

export const SelectionContext = createContext<SelectionStore | null>(null)

function useStore(): SelectionStore {
  const store = useContext(SelectionContext)
  if (!store) throw new Error('SelectionContext is missing')
  return store
}

export function useIsSelected(id: string): boolean {
  const store = useStore()
  return useSyncExternalStore(store.subscribe, () => store.isSelected(id), () => false)
}

export function useSelectionState(): SelectionState {
  const store = useStore()
  return useSyncExternalStore(store.subscribe, store.getState, () => EMPTY)
}
