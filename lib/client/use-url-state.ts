'use client'

import { usePathname, useRouter, useSearchParams } from 'next/navigation'
import { useCallback, useEffect, useMemo, useRef } from 'react'
import { pickFieldParams, pickParams, withParams } from './filters'

/**
 * Filters kept in the URL. `push` makes a history entry (the back button restores the previous filter);
 * `replace` is for keystrokes in a search box, which should not each become a history entry.
 */
/** How long a navigation this hook asked for is taken as the URL to build on, before the router has committed it. */
const PENDING_TRUST_MS = 2_000

export function useUrlState<K extends string>(keys: readonly K[]) {
  const router = useRouter()
  const pathname = usePathname()
  const searchParams = useSearchParams()
  const search = searchParams.toString()
  const values = useMemo(() => pickParams(new URLSearchParams(search), keys), [search, keys])
  /** The header, property and x-death filters (`h.tenant=acme`), whose names no list can hold. */
  const fields = useMemo(() => pickFieldParams(new URLSearchParams(search)), [search])
  /**
   * The query string this hook last navigated to, until the URL shows it. The router commits a navigation later, in a
   * transition: a second change meanwhile (a debounced search landing just after a click) must build on the first,
   * not on the URL as it still is, or it undoes it. Only trusted for a moment, so a back button wins afterwards.
   */
  const requested = useRef<{ search: string; at: number } | null>(null)
  useEffect(() => {
    if (requested.current && new URLSearchParams(requested.current.search).toString() === search) requested.current = null
  }, [search])
  useEffect(() => {
    // Back and forward: the URL the user went to is the one to build on.
    const forget = () => (requested.current = null)
    window.addEventListener('popstate', forget)
    return () => window.removeEventListener('popstate', forget)
  }, [])

  const update = useCallback(
    (changes: Record<string, string | null | undefined>, mode: 'push' | 'replace' = 'push') => {
      // A debounced change landing after the user has moved on must not drag them back.
      if (window.location.pathname !== pathname) return
      const pending = requested.current && performance.now() - requested.current.at < PENDING_TRUST_MS ? requested.current.search : null
      const next = withParams(new URLSearchParams(pending ?? window.location.search), changes)
      requested.current = { search: next, at: performance.now() }
      const href = `${pathname}${next}`
      if (mode === 'push') router.push(href, { scroll: false })
      else router.replace(href, { scroll: false })
    },
    [pathname, router],
  )

  return { values, fields, update, searchParams }
}
