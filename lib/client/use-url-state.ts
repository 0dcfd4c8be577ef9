'use client'

import { usePathname, useRouter, useSearchParams } from 'next/navigation'
import { useCallback, useMemo } from 'react'
import { pickFieldParams, pickParams, withParams } from './filters'

/**
 * Filters kept in the URL. `push` makes a history entry (the back button restores the previous filter);
 * `replace` is for keystrokes in a search box, which should not each become a history entry.
 */
export function useUrlState<K extends string>(keys: readonly K[]) {
  const router = useRouter()
  const pathname = usePathname()
  const searchParams = useSearchParams()
  const search = searchParams.toString()
  const values = useMemo(() => pickParams(new URLSearchParams(search), keys), [search, keys])
  /** The header, property and x-death filters (`h.tenant=acme`), whose names no list can hold. */
  const fields = useMemo(() => pickFieldParams(new URLSearchParams(search)), [search])

  const update = useCallback(
    (changes: Record<string, string | null | undefined>, mode: 'push' | 'replace' = 'push') => {
      // A debounced change landing after the user has moved on must not drag them back.
      if (window.location.pathname !== pathname) return
      const href = `${pathname}${withParams(new URLSearchParams(window.location.search), changes)}`
      if (mode === 'push') router.push(href, { scroll: false })
      else router.replace(href, { scroll: false })
    },
    [pathname, router],
  )

  return { values, fields, update, searchParams }
}
