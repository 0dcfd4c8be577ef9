'use client'

import { useSyncExternalStore } from 'react'

const noSubscription = () => () => {}

/**
 * False while React hydrates what the server rendered, true from then on. A query another part of the page (the
 * header) already answered would otherwise render its data during hydration, where the server rendered none: React
 * error #418 (docs/ARCHITECTURE.md#display-preferences-theme-and-time-zone).
 */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  )
}
