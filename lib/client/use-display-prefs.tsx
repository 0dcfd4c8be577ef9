'use client'

import { createContext, useCallback, useContext, useEffect, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react'
import { PREF_COOKIES, type DisplayPrefs, type Theme, type TimeMode } from '@/lib/shared/display-prefs'
import { absoluteTime, timeTitle, zoneLabel } from './format'

type PrefsContext = DisplayPrefs & { setTheme: (theme: Theme) => void; setTime: (time: TimeMode) => void }

const Context = createContext<PrefsContext | null>(null)

const YEAR_S = 365 * 24 * 3600

function writeCookie(name: string, value: string) {
  document.cookie = `${name}=${encodeURIComponent(value)}; Path=/; Max-Age=${YEAR_S}; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`
}

function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'
}

/**
 * Theme and time zone as the server read them from the cookies, so the first render in the browser matches the
 * server's. The browser's own zone is learnt after hydration (and kept in a cookie for the next server render).
 */
export function DisplayPrefsProvider({ initial, children }: { initial: DisplayPrefs; children: ReactNode }) {
  const [prefs, setPrefs] = useState(initial)

  useEffect(() => {
    const zone = browserZone()
    if (zone === prefs.zone) return
    writeCookie(PREF_COOKIES.zone, zone)
    // eslint-disable-next-line react-hooks/set-state-in-effect -- the browser's zone is only known after hydration
    setPrefs((p) => ({ ...p, zone }))
  }, [prefs.zone])

  const setTheme = useCallback((theme: Theme) => {
    writeCookie(PREF_COOKIES.theme, theme)
    document.documentElement.dataset.theme = theme
    setPrefs((p) => ({ ...p, theme }))
  }, [])
  const setTime = useCallback((time: TimeMode) => {
    writeCookie(PREF_COOKIES.time, time)
    setPrefs((p) => ({ ...p, time }))
  }, [])

  const value = useMemo(() => ({ ...prefs, setTheme, setTime }), [prefs, setTheme, setTime])
  return <Context.Provider value={value}>{children}</Context.Provider>
}

export function useDisplayPrefs(): PrefsContext {
  const prefs = useContext(Context)
  if (!prefs) throw new Error('useDisplayPrefs outside DisplayPrefsProvider')
  return prefs
}

/** Times as the reader chose to see them: in UTC, or in the browser's zone. */
export function useTimeFormat() {
  const { time, zone } = useDisplayPrefs()
  const shown = time === 'utc' ? 'UTC' : zone
  return useMemo(
    () => ({
      zone: shown,
      absolute: (iso: string | null | undefined) => absoluteTime(iso, shown),
      zoneLabel: (iso: string | null | undefined) => zoneLabel(iso, shown),
      title: (iso: string | null | undefined) => timeTitle(iso, shown),
    }),
    [shown],
  )
}

const DARK_QUERY = '(prefers-color-scheme: dark)'
const subscribeToSystemScheme = (onChange: () => void) => {
  const query = window.matchMedia(DARK_QUERY)
  query.addEventListener('change', onChange)
  return () => query.removeEventListener('change', onChange)
}

/**
 * Whether the page is dark now: the reader's theme, or the system's when they chose none. For what CSS cannot colour
 * (a canvas): it draws again when this changes. The server renders light.
 */
export function useDarkMode(): boolean {
  const { theme } = useDisplayPrefs()
  const systemDark = useSyncExternalStore(
    subscribeToSystemScheme,
    () => window.matchMedia(DARK_QUERY).matches,
    () => false,
  )
  return theme === 'dark' || (theme === 'system' && systemDark)
}
