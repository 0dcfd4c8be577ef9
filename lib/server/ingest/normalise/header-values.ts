import 'server-only'
import { parseIsoDate, plausibleDate } from './dates'

/**
 * Defensive readers for header and property values. Inputs are typed `unknown` on purpose: the
 * contract says PlainValue, but a forged or buggy publisher can put anything on the wire, and the
 * normaliser must never throw.
 */

export type Lookup = Record<string, unknown>

export function asRecord(value: unknown): Lookup | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null
  if (Buffer.isBuffer(value) || value instanceof Date) return null
  return value as Lookup
}

/** Own-property lookup, so names like `__proto__` or `constructor` never reach the prototype. */
export function getField(record: unknown, name: string): unknown {
  const rec = asRecord(record)
  if (!rec || !Object.hasOwn(rec, name)) return undefined
  return rec[name]
}

/** amqplib wraps some typed values as `{ '!': tag, value }` (timestamps, decimals, explicit widths). */
function unwrapTagged(value: unknown): unknown {
  const rec = asRecord(value)
  if (rec && Object.hasOwn(rec, '!') && Object.hasOwn(rec, 'value')) return rec.value
  return value
}

const utf8 = new TextDecoder('utf-8')

export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes)
}

export function asText(value: unknown): string | null {
  const v = unwrapTagged(value)
  if (typeof v === 'string') return v
  if (v instanceof Uint8Array) return decodeUtf8(v)
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : null
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v)
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString()
  return null
}

/** Text with at least one non-space character, else null. */
export function asNonBlankText(value: unknown): string | null {
  const text = asText(value)
  return text !== null && text.trim() !== '' ? text : null
}

export function asInteger(value: unknown): number | null {
  const v = unwrapTagged(value)
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null
  if (typeof v === 'bigint') {
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : null
  }
  const text = typeof v === 'string' || v instanceof Uint8Array ? asText(v) : null
  if (text === null) return null
  const trimmed = text.trim()
  if (!/^[+-]?\d{1,16}$/.test(trimmed)) return null
  const n = Number(trimmed)
  return Number.isSafeInteger(n) ? n : null
}

/** Epoch numbers below 1e11 are seconds (AMQP timestamps), larger ones milliseconds. */
export function epochToDate(n: number): Date | null {
  if (!Number.isFinite(n) || n < 0) return null
  const ms = n < 1e11 ? n * 1000 : n < 1e14 ? n : NaN
  return plausibleDate(new Date(ms))
}

/** A timestamp in any of the shapes the drainer or amqplib may hand over. */
export function asDate(value: unknown): Date | null {
  if (value instanceof Date) return plausibleDate(new Date(value.getTime()))
  const v = unwrapTagged(value)
  if (v instanceof Date) return plausibleDate(new Date(v.getTime()))
  if (typeof v === 'number') return epochToDate(v)
  if (typeof v === 'bigint') return v >= 0n && v < 100_000_000_000_000n ? epochToDate(Number(v)) : null
  const text = typeof v === 'string' || v instanceof Uint8Array ? asText(v) : null
  if (text === null) return null
  const trimmed = text.trim()
  if (/^\d{1,15}$/.test(trimmed)) return epochToDate(Number(trimmed))
  return parseIsoDate(trimmed)
}

export function asTextArray(value: unknown, limit: number): { values: string[]; malformed: boolean } {
  if (value === undefined || value === null) return { values: [], malformed: false }
  const single = asText(value)
  if (!Array.isArray(value)) return { values: single === null ? [] : [single], malformed: true }
  const values: string[] = []
  let malformed = false
  for (const item of value.slice(0, limit)) {
    const text = asText(item)
    if (text === null) malformed = true
    else values.push(text)
  }
  return { values, malformed: malformed || value.length > limit }
}

/** Header names whose prefix matches, case-insensitively (Symfony stamp headers). */
export function headerNamesWithPrefix(headers: unknown, prefix: string): string[] {
  const rec = asRecord(headers)
  if (!rec) return []
  const lower = prefix.toLowerCase()
  return Object.keys(rec).filter((name) => name.toLowerCase().startsWith(lower))
}
