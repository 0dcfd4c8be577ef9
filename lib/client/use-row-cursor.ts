'use client'

import { useEffect, useRef, useState, useSyncExternalStore, type RefObject } from 'react'

type RowCursorOptions = {
  count: number
  onOpen: (index: number) => void
  onToggle?: (index: number) => void
}

const TEXT_INPUTS = new Set(['text', 'search', 'number', 'email', 'url', 'tel', 'password', 'date', 'datetime-local', 'time'])

/** Keys typed into a field belong to the field; checkboxes and buttons do not take letters. */
export function isTypingTarget(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false
  if (target.isContentEditable) return true
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true
  return target instanceof HTMLInputElement && TEXT_INPUTS.has(target.type)
}

/** Focuses the page's search box (the element marked `data-search-input`). */
export function focusSearch(): boolean {
  const input = document.querySelector<HTMLInputElement>('[data-search-input]')
  if (!input) return false
  input.focus()
  input.select()
  return true
}

/**
 * The cursor row lives outside React state: moving it re-renders the two rows involved, not a table of
 * hundreds of rows.
 */
export function createCursorStore() {
  let value = -1
  const listeners = new Set<() => void>()
  return {
    get: () => value,
    set(next: number) {
      if (next === value) return
      value = next
      for (const l of listeners) l()
    },
    subscribe(listener: () => void) {
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
  }
}

export type CursorStore = ReturnType<typeof createCursorStore>

export function useIsCursor(store: CursorStore, index: number): boolean {
  return useSyncExternalStore(store.subscribe, () => store.get() === index, () => false)
}

/** Keeps the cursor row on screen; `container` holds rows marked `data-row-index`. */
export function useScrollCursorIntoView(store: CursorStore, container: RefObject<HTMLElement | null>) {
  useEffect(
    () =>
      store.subscribe(() => {
        const i = store.get()
        if (i >= 0) container.current?.querySelector(`[data-row-index="${i}"]`)?.scrollIntoView({ block: 'nearest' })
      }),
    [store, container],
  )
}

/**
 * Table keyboard navigation: `j`/`k` move the cursor, `Enter` opens, `x` toggles selection, `/` focuses
 * search. Keys are ignored while typing and when a modifier is held (browser shortcuts stay intact).
 */
export function useRowCursor({ count, onOpen, onToggle }: RowCursorOptions): CursorStore {
  const [store] = useState(createCursorStore)
  const latest = useRef({ count, onOpen, onToggle })
  useEffect(() => {
    latest.current = { count, onOpen, onToggle }
  })

  useEffect(() => {
    function onKeyDown(event: KeyboardEvent) {
      if (event.defaultPrevented || event.metaKey || event.ctrlKey || event.altKey || isTypingTarget(event.target)) return
      const { count, onOpen, onToggle } = latest.current
      const cursor = store.get()
      switch (event.key) {
        case 'j':
          if (count > 0) store.set(Math.min(cursor + 1, count - 1))
          break
        case 'k':
          if (count > 0) store.set(cursor <= 0 ? 0 : Math.min(cursor - 1, count - 1))
          break
        case 'Enter':
          // A focused link or button handles Enter itself.
          if (event.target instanceof HTMLAnchorElement || event.target instanceof HTMLButtonElement) return
          if (cursor < 0 || cursor >= count) return
          onOpen(cursor)
          break
        case 'x':
          if (!onToggle || cursor < 0 || cursor >= count) return
          onToggle(cursor)
          break
        case '/':
          if (!focusSearch()) return
          break
        default:
          return
      }
      event.preventDefault()
    }
    window.addEventListener('keydown', onKeyDown)
    return () => window.removeEventListener('keydown', onKeyDown)
  }, [store])

  useEffect(() => {
    if (store.get() >= count) store.set(count - 1)
  }, [count, store])

  return store
}
