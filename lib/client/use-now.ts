'use client'

import { useSyncExternalStore } from 'react'

// One shared ticker for every relative time on the page, instead of a timer per table cell.
const TICK_MS = 15_000
let now = Date.now()
const listeners = new Set<() => void>()
let timer: ReturnType<typeof setInterval> | null = null

function subscribe(listener: () => void) {
  listeners.add(listener)
  if (!timer) {
    now = Date.now()
    timer = setInterval(() => {
      now = Date.now()
      for (const l of listeners) l()
    }, TICK_MS)
  }
  return () => {
    listeners.delete(listener)
    if (listeners.size === 0 && timer) {
      clearInterval(timer)
      timer = null
    }
  }
}

/** The current time, refreshed every 15 s; 0 during server rendering, where no relative time is shown. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now, () => 0)
}
