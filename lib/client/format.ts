/** Display formatting for the pages. Pure functions: no locale surprises between renders. */

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/** Local wall-clock time, seconds precision: "2026-11-30 14:05:09". */
export function absoluteTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** For hover titles: local time plus the UTC instant, so times pasted into tickets are unambiguous. */
export function timeTitle(iso: string | null | undefined): string {
  if (!iso) return ''
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return iso
  return `${absoluteTime(iso)} local · ${d.toISOString()}`
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
