import { z } from 'zod'

/**
 * The reader's display choices, kept in cookies (not localStorage) so the server renders exactly what the browser
 * will: a choice only the browser knows is how hydration errors start (docs/ARCHITECTURE.md#the-web-side).
 */
export const PREF_COOKIES = { theme: 'lazarus-theme', time: 'lazarus-time', zone: 'lazarus-tz' } as const

export const THEMES = ['system', 'light', 'dark'] as const
export type Theme = (typeof THEMES)[number]

export const TIME_MODES = ['local', 'utc'] as const
export type TimeMode = (typeof TIME_MODES)[number]

/** An IANA zone name as the browser reports it ("Europe/Berlin", "Etc/GMT+5"); anything else falls back to UTC. */
const zoneSchema = z.string().regex(/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/)

export type DisplayPrefs = { theme: Theme; time: TimeMode; zone: string }

function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** The cookies' values, parsed; a missing or forged cookie gives the default (system theme, local time, UTC until the browser says). */
export function parseDisplayPrefs(cookie: (name: string) => string | undefined): DisplayPrefs {
  const theme = z.enum(THEMES).catch('system').parse(cookie(PREF_COOKIES.theme))
  const time = z.enum(TIME_MODES).catch('local').parse(cookie(PREF_COOKIES.time))
  const zone = zoneSchema.safeParse(cookie(PREF_COOKIES.zone))
  return { theme, time, zone: zone.success && knownZone(zone.data) ? zone.data : 'UTC' }
}
