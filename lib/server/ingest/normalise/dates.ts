import 'server-only'

/** RabbitMQ's first release; anything earlier is a forged or broken timestamp. */
const EARLIEST_PLAUSIBLE = Date.UTC(2007, 0, 1)
const LATEST_REPRESENTABLE = Date.UTC(9999, 11, 31)
/** Clock skew tolerated between the broker, the failing service and us. */
export const FUTURE_SKEW_MS = 5 * 60_000

/** The date if it is a real calendar instant in a sane range, else null. */
export function plausibleDate(date: Date): Date | null {
  const ms = date.getTime()
  if (Number.isNaN(ms) || ms < EARLIEST_PLAUSIBLE || ms > LATEST_REPRESENTABLE) return null
  return date
}

export function isInFuture(date: Date, now: Date): boolean {
  return date.getTime() > now.getTime() + FUTURE_SKEW_MS
}

type Parts = { year: number; month: number; day: number; hour: number; minute: number; second: number; fraction?: string }

/** Date.UTC silently rolls 31 February over into March; reject such inputs instead. */
function fromParts(p: Parts, offsetMinutes: number): Date | null {
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > 31) return null
  if (p.hour > 23 || p.minute > 59 || p.second > 59) return null
  const ms = p.fraction ? Math.floor(Number(`0.${p.fraction}`) * 1000) : 0
  const utc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, ms)
  const check = new Date(utc)
  if (check.getUTCDate() !== p.day || check.getUTCMonth() !== p.month - 1) return null
  return plausibleDate(new Date(utc - offsetMinutes * 60_000))
}

function offsetToMinutes(zone: string | undefined): number | null {
  if (!zone || zone.toUpperCase() === 'Z') return 0
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)
  if (!m) return null
  const minutes = Number(m[2]) * 60 + Number(m[3])
  if (minutes > 14 * 60) return null
  return m[1] === '-' ? -minutes : minutes
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s?(Z|[+-]\d{2}:?\d{2})?$/i

/**
 * Strict ISO 8601 / RFC 3339 (Date.parse accepts nonsense like "garbage 2024"). A missing zone
 * means UTC: .NET's DateTime.UtcNow and most framework timestamps are UTC without saying so.
 */
export function parseIsoDate(text: string): Date | null {
  const m = ISO.exec(text.trim())
  if (!m) return null
  const offset = offsetToMinutes(m[8])
  if (offset === null) return null
  return fromParts(
    {
      year: Number(m[1]),
      month: Number(m[2]),
      day: Number(m[3]),
      hour: Number(m[4] ?? 0),
      minute: Number(m[5] ?? 0),
      second: Number(m[6] ?? 0),
      fraction: m[7],
    },
    offset,
  )
}

const NSERVICEBUS = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}):(\d{1,7}) Z$/

/** NServiceBus wire format `yyyy-MM-dd HH:mm:ss:ffffff Z` (colon before the micros, literal " Z", UTC). */
export function parseNServiceBusTime(text: string): Date | null {
  const m = NSERVICEBUS.exec(text.trim())
  if (!m) return parseIsoDate(text)
  return fromParts(
    {
      year: Number(m[1]),
      month: Number(m[2]),
      day: Number(m[3]),
      hour: Number(m[4]),
      minute: Number(m[5]),
      second: Number(m[6]),
      fraction: m[7],
    },
    0,
  )
}

/** Unix epoch milliseconds written as a string or number (Wolverine `failed-at`). */
export function parseUnixMillis(value: string | number): Date | null {
  const text = String(value).trim()
  if (!/^\d{1,15}$/.test(text)) return null
  return plausibleDate(new Date(Number(text)))
}

export type DayOrder = 'mdy' | 'dmy'

const CULTURE_DATE =
  /^(\d{1,4})([./-])(\d{1,2})\2(\d{1,4})[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,7}))?)?(?:\s?([AaPp][Mm]))?\s?([+-]\d{2}:?\d{2}|Z)?$/

type CultureParts = { a: number; b: number; c: number; sep: string; yearFirst: boolean; rest: RegExpExecArray }

function splitCultureDate(text: string): CultureParts | null {
  const m = CULTURE_DATE.exec(text.trim())
  if (!m) return null
  const yearFirst = m[1].length === 4
  if (!yearFirst && m[4].length !== 4) return null
  return { a: Number(m[1]), b: Number(m[3]), c: Number(m[4]), sep: m[2], yearFirst, rest: m }
}

/**
 * The day/month order a culture-formatted date reveals, or null when it is ambiguous.
 * Dotted and dashed short dates (de-DE, ru-RU, nl-NL) are day-first in every .NET culture.
 */
export function revealedDayOrder(text: string): DayOrder | null {
  const p = splitCultureDate(text)
  if (!p || p.yearFirst) return null
  if (p.sep !== '/') return 'dmy'
  if (p.a > 12 && p.b <= 12) return 'dmy'
  if (p.b > 12 && p.a <= 12) return 'mdy'
  return null
}

/**
 * .NET `DateTimeOffset.ToString()` in the process culture, e.g. "03/01/2024 10:15:30 +00:00"
 * (invariant), "01.03.2024 10:15:30 +01:00" (de-DE), "3/1/2024 10:15:30 AM +00:00" (en-US).
 */
export function parseCultureDateTime(text: string, order: DayOrder): Date | null {
  const p = splitCultureDate(text)
  if (!p) return null
  const m = p.rest
  let year: number, month: number, day: number
  if (p.yearFirst) [year, month, day] = [p.a, p.b, p.c]
  else if (order === 'mdy') [month, day, year] = [p.a, p.b, p.c]
  else [day, month, year] = [p.a, p.b, p.c]
  let hour = Number(m[5])
  const meridiem = m[9]?.toUpperCase()
  if (meridiem) {
    if (hour < 1 || hour > 12) return null
    hour = (hour % 12) + (meridiem === 'PM' ? 12 : 0)
  }
  const offset = offsetToMinutes(m[10])
  if (offset === null) return null
  return fromParts(
    { year, month, day, hour, minute: Number(m[6]), second: Number(m[7] ?? 0), fraction: m[8] },
    offset,
  )
}
