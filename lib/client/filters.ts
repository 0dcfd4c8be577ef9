import { isFieldFilterParam } from '@/lib/shared/schemas/field-filter'

/**
 * Page filters live in the URL (shareable, back button works). These helpers translate between the URL's
 * query parameters and the API's: the URL may hold a relative `range` ("24h") that becomes an absolute
 * `from` only when a request is made, so a query key stays stable while its data keeps moving.
 */

export const TIME_RANGES = [
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '6h', label: 'Last 6 hours', ms: 6 * 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 24 * 3_600_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 24 * 3_600_000 },
  { value: '30d', label: 'Last 30 days', ms: 30 * 24 * 3_600_000 },
] as const

export const GROUP_FILTER_KEYS = ['view', 'source', 'status', 'failureKind', 'service', 'range', 'from', 'to', 'sort'] as const
export const MESSAGE_FILTER_KEYS = ['group', 'source', 'status', 'failureKind', 'service', 'serviceVersion', 'entity', 'stream', 'subject', 'q', 'traceId', 'range', 'from', 'to'] as const

export type MessageFilterKey = (typeof MESSAGE_FILTER_KEYS)[number]

type ReadableParams = { get(name: string): string | null }

/** The known, non-empty parameters, in a fixed order so equal filters give equal query keys. */
export function pickParams<K extends string>(params: ReadableParams, keys: readonly K[]): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {}
  for (const key of keys) {
    const value = params.get(key)
    if (value !== null && value.trim() !== '') out[key] = value
  }
  return out
}

/**
 * The header, property and x-death filters in the URL (`h.tenant=acme`, lib/shared/schemas/field-filter.ts), sorted so
 * equal filters give equal query keys. Their names are open-ended, so they are picked by shape rather than listed.
 */
export function pickFieldParams(params: { keys(): Iterable<string>; get(name: string): string | null }): Record<string, string> {
  const out: Record<string, string> = {}
  for (const key of [...new Set(params.keys())].filter(isFieldFilterParam).sort()) {
    const value = params.get(key)
    if (value !== null && value !== '') out[key] = value
  }
  return out
}

/** Resolves `range` to an absolute `from` (to the minute) for the API; other parameters pass through. */
export function toApiParams(params: Record<string, string | undefined>, now = Date.now()): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(params)) if (value !== undefined && key !== 'range') out[key] = value
  const range = TIME_RANGES.find((r) => r.value === params.range)
  if (range && !params.from) out.from = new Date(Math.floor((now - range.ms) / 60_000) * 60_000).toISOString()
  return out
}

/** A new query string with `changes` applied (empty or null values removed). */
export function withParams(current: ReadableParams & { toString(): string }, changes: Record<string, string | null | undefined>): string {
  const next = new URLSearchParams(current.toString())
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === '') next.delete(key)
    else next.set(key, value)
  }
  const text = next.toString()
  return text ? `?${text}` : ''
}
