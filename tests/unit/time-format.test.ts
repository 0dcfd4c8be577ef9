import { describe, expect, it } from 'vitest'
import { absoluteTime, timeTitle, zoneLabel } from '@/lib/client/format'
import { parseDisplayPrefs, PREF_COOKIES } from '@/lib/shared/display-prefs'

const ISO = '2026-11-30T13:05:09.250Z'

describe('times in a chosen zone', () => {
  it('render the same text whatever zone the process runs in (server and browser agree)', () => {
    expect(absoluteTime(ISO, 'UTC')).toBe('2026-11-30 13:05:09')
    expect(absoluteTime(ISO, 'Europe/Berlin')).toBe('2026-11-30 14:05:09')
    expect(absoluteTime(ISO, 'Asia/Kathmandu')).toBe('2026-11-30 18:50:09')
    expect(absoluteTime(ISO, 'America/St_Johns')).toBe('2026-11-30 09:35:09')
  })

  it('name the zone by its offset at that instant, daylight saving included', () => {
    expect(zoneLabel(ISO, 'UTC')).toBe('UTC')
    expect(zoneLabel(ISO, 'Europe/Berlin')).toBe('UTC+1')
    expect(zoneLabel('2026-07-01T12:00:00Z', 'Europe/Berlin')).toBe('UTC+2')
    expect(zoneLabel(ISO, 'Asia/Kathmandu')).toBe('UTC+5:45')
    expect(zoneLabel(ISO, 'America/St_Johns')).toBe('UTC−3:30')
    expect(zoneLabel(ISO, 'Europe/London')).toBe('UTC')
  })

  it('give hover titles with the zone and the ISO instant', () => {
    expect(timeTitle(ISO, 'Europe/Berlin')).toBe('2026-11-30 14:05:09 UTC+1 · 2026-11-30T13:05:09.250Z')
    expect(timeTitle(ISO, 'UTC')).toBe('2026-11-30 13:05:09 UTC · 2026-11-30T13:05:09.250Z')
  })

  it('pass through what is not a time', () => {
    expect(absoluteTime(null, 'UTC')).toBe('—')
    expect(absoluteTime('', 'UTC')).toBe('—')
    expect(absoluteTime('yesterday', 'UTC')).toBe('yesterday')
    expect(timeTitle(undefined, 'UTC')).toBe('')
  })
})

describe('display preference cookies', () => {
  const from = (cookies: Record<string, string>) => parseDisplayPrefs((name) => cookies[name])

  it('default to the system theme and local time, in UTC until the browser tells its zone', () => {
    expect(from({})).toEqual({ theme: 'system', time: 'local', zone: 'UTC' })
  })

  it('keep valid choices', () => {
    expect(from({ [PREF_COOKIES.theme]: 'dark', [PREF_COOKIES.time]: 'utc', [PREF_COOKIES.zone]: 'Asia/Kathmandu' })).toEqual({ theme: 'dark', time: 'utc', zone: 'Asia/Kathmandu' })
  })

  it('ignore forged values', () => {
    expect(from({ [PREF_COOKIES.theme]: 'purple', [PREF_COOKIES.time]: '<script>', [PREF_COOKIES.zone]: 'Mars/Olympus_Mons' })).toEqual({ theme: 'system', time: 'local', zone: 'UTC' })
    expect(from({ [PREF_COOKIES.zone]: '"><img src=x>' }).zone).toBe('UTC')
  })
})
