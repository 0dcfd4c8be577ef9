/** Display formatting for the pages. Pure functions: no locale surprises between renders. */

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterFor(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone)
  if (!f) {
    // Numeric parts only: zone names ("CET", "GMT+1") differ between ICU builds, the server's and the browser's.
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
    formatters.set(zone, f)
  }
  return f
}

/** The wall-clock fields of an instant in `zone`, and that zone's offset from UTC then, in minutes. */
function zoned(t: number, zone: string): { text: string; offset: number } {
  if (zone === 'UTC') {
    const d = new Date(t)
    return { text: `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`, offset: 0 }
  }
  const parts: Record<string, number> = {}
  for (const p of formatterFor(zone).formatToParts(t)) if (p.type !== 'literal') parts[p.type] = Number(p.value)
  const { year, month, day, hour, minute, second } = parts as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number>
  const wall = Date.UTC(year, month - 1, day, hour, minute, second)
  return {
    text: `${pad(year, 4)}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(minute)}:${pad(second)}`,
    offset: Math.round((wall - Math.floor(t / 1000) * 1000) / 60_000),
  }
}

function parseTime(iso: string | null | undefined): number | null {
  if (!iso) return null
  const t = Date.parse(iso)
  return Number.isNaN(t) ? null : t
}

/** Wall-clock time in `zone` (an IANA name, or 'UTC'), seconds precision: "2026-11-30 14:05:09". */
export function absoluteTime(iso: string | null | undefined, zone: string): string {
  const t = parseTime(iso)
  return t === null ? (iso ?? '—') || '—' : zoned(t, zone).text
}

/** The zone's offset at that instant, as shown after a time: "UTC", "UTC+1", "UTC−3:30". */
export function zoneLabel(iso: string | null | undefined, zone: string): string {
  const t = parseTime(iso) ?? 0
  const offset = zoned(t, zone).offset
  if (zone === 'UTC' || offset === 0) return 'UTC'
  const a = Math.abs(offset)
  return `UTC${offset < 0 ? '−' : '+'}${Math.floor(a / 60)}${a % 60 ? `:${pad(a % 60)}` : ''}`
}

/** For hover titles: the time as shown, with its zone, then the ISO instant, so times pasted into tickets are unambiguous. */
export function timeTitle(iso: string | null | undefined, zone: string): string {
  const t = parseTime(iso)
  if (t === null) return iso ?? ''
  return `${absoluteTime(iso, zone)} ${zoneLabel(iso, zone)} · ${new Date(t).toISOString()}`
}

export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—'
  const t = Date.parse(iso)
  if (Number.isNaN(t)) return iso
  const s = Math.round((now - t) / 1000)
  const future = s < 0
  const a = Math.abs(s)
  let text: string
  if (a < 5) return 'just now'
  else if (a < 60) text = `${a}s`
  else if (a < 3600) text = `${Math.floor(a / 60)}m`
  else if (a < 86_400) text = `${Math.floor(a / 3600)}h`
  else if (a < 86_400 * 60) text = `${Math.floor(a / 86_400)}d`
  else if (a < 86_400 * 730) text = `${Math.floor(a / (86_400 * 30))}mo`
  else text = `${Math.floor(a / (86_400 * 365))}y`
  return future ? `in ${text}` : `${text} ago`
}

const integer = new Intl.NumberFormat('en-US')

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return '—'
  return integer.format(n)
}

/** 1.2k, 3.4M: for tight cells where the exact number is in the title. */
export function compactCount(n: number | null | undefined): string {
  if (n === null || n === undefined || Number.isNaN(n)) return '—'
  if (Math.abs(n) < 10_000) return integer.format(n)
  if (Math.abs(n) < 1_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}

export function formatRate(perMinute: number | null | undefined): string {
  if (perMinute === null || perMinute === undefined || Number.isNaN(perMinute)) return '—'
  if (perMinute === 0) return '0'
  if (perMinute < 0.1) return '<0.1'
  if (perMinute < 10) return perMinute.toFixed(1)
  return integer.format(Math.round(perMinute))
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—'
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

// C0 controls (but tab and newline), DEL, C1 controls, and the bidi overrides/isolates that can make
// text read differently from what it is ("Trojan Source").
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g

/**
 * Message content is untrusted: terminal escapes and invisible or direction-changing characters are made
 * visible (ESC becomes ␛, other C0 controls their Control Pictures glyph, the rest ⟨U+XXXX⟩). A CR before a
 * LF stays, since Windows line ends are not an attack.
 */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, (ch, offset: number, whole: string) => {
    const code = ch.charCodeAt(0)
    if (code === 0x0d && whole.charCodeAt(offset + 1) === 0x0a) return ch
    if (code === 0x1b) return '␛'
    if (code < 0x20) return String.fromCharCode(0x2400 + code)
    if (code === 0x7f) return '␡'
    return `⟨U+${code.toString(16).toUpperCase().padStart(4, '0')}⟩`
  })
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`
}
