import 'server-only'
import { randomBytes } from 'node:crypto'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'

/**
 * The trace a message belongs to, read from its headers (docs/ARCHITECTURE.md#traces): W3C `traceparent`, Zipkin's B3
 * (the single `b3` header, or `X-B3-TraceId` with `X-B3-SpanId`) and Jaeger's `uber-trace-id`, in that order of
 * preference. Ids are lower-case hex, the trace id always 32 characters (a 64-bit one left-padded with zeros, as
 * Tempo and Jaeger store them) and the span id 16. A value that does not parse strictly is ignored, never an error.
 *
 * This runs in the drainer for every message (build-row.ts), so it allocates next to nothing: one pass over the
 * header names without building a list, names compared case-insensitively character by character (AMQP and NATS
 * header names are case-sensitive strings, and publishers spell these differently), and only a found id is sliced.
 */
export type TraceContext = { traceId: string; spanId: string; format: 'w3c' | 'b3' | 'uber' }

const ZERO_TRACE_ID = '0'.repeat(32)
const ZERO_SPAN_ID = '0'.repeat(16)

/** The header names read, lower case: a name matches whatever its case. */
const TRACEPARENT = 'traceparent'
const B3 = 'b3'
const B3_TRACE_ID = 'x-b3-traceid'
const B3_SPAN_ID = 'x-b3-spanid'
const UBER_TRACE_ID = 'uber-trace-id'

/** Whether `name` is `lower` in any case, without allocating a lower-cased copy. */
function sameName(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i)
    // ASCII upper-case letters fold to lower case; anything else must be equal as it is.
    if ((c >= 65 && c <= 90 ? c + 32 : c) !== lower.charCodeAt(i)) return false
  }
  return true
}

const isLowerHex = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 102)
const isHex = (c: number) => isLowerHex(c) || (c >= 65 && c <= 70)

/** Whether `text[from, to)` is lower-case hex (with `anyCase`, upper case too). */
function hexRun(text: string, from: number, to: number, anyCase = false): boolean {
  if (to <= from || to > text.length) return false
  for (let i = from; i < to; i++) if (!(anyCase ? isHex(text.charCodeAt(i)) : isLowerHex(text.charCodeAt(i)))) return false
  return true
}

/** A header's text: a string, or a repeated NATS header's first value; anything else (bytes, numbers) has none. */
function headerText(value: TypedValue | undefined): string | null {
  if (value === undefined) return null
  if (value.t === 'S' && 'v' in value) return value.v
  if (value.t === 'A' && 'v' in value && !('tooDeep' in value)) {
    const first = value.v[0]
    return first !== undefined && first.t === 'S' && 'v' in first ? first.v : null
  }
  return null
}

/** HTTP's optional whitespace around a value; most values have none, and then nothing is allocated. */
function trimmed(text: string): string {
  const first = text.charCodeAt(0)
  const last = text.charCodeAt(text.length - 1)
  return first === 32 || first === 9 || last === 32 || last === 9 ? text.trim() : text
}

/**
 * W3C Trace Context `traceparent`: `version-traceid-parentid-flags`, two, 32, 16 and two lower-case hex characters.
 * Version `ff` is invalid; version 00 is exactly 55 characters, a later version may append `-` and more.
 */
export function parseTraceparent(raw: string): TraceContext | null {
  const text = trimmed(raw)
  if (text.length < 55 || text.charCodeAt(2) !== 45 || text.charCodeAt(35) !== 45 || text.charCodeAt(52) !== 45) return null
  if (!hexRun(text, 0, 2) || !hexRun(text, 3, 35) || !hexRun(text, 36, 52) || !hexRun(text, 53, 55)) return null
  const version = text.slice(0, 2)
  if (version === 'ff') return null
  if (text.length > 55 && (version === '00' || text.charCodeAt(55) !== 45)) return null
  const traceId = text.slice(3, 35)
  const spanId = text.slice(36, 52)
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null
  return { traceId, spanId, format: 'w3c' }
}

/** A B3 trace id (16 or 32 lower-case hex characters) as 32, or null. */
function b3TraceId(text: string, from: number, to: number): string | null {
  const length = to - from
  if ((length !== 16 && length !== 32) || !hexRun(text, from, to)) return null
  const id = length === 32 ? text.slice(from, to) : `0000000000000000${text.slice(from, to)}`
  return id === ZERO_TRACE_ID ? null : id
}

function b3SpanId(text: string, from: number, to: number): string | null {
  if (to - from !== 16 || !hexRun(text, from, to)) return null
  const id = text.slice(from, to)
  return id === ZERO_SPAN_ID ? null : id
}

/**
 * B3 single header: `traceid-spanid[-sampling[-parentspanid]]`; a sampling decision alone (`0`, `1`, `d`) carries no
 * ids. Sampling is `0`, `1` or `d`, a parent span id 16 lower-case hex characters.
 */
export function parseB3(raw: string): TraceContext | null {
  const text = trimmed(raw)
  const firstDash = text.indexOf('-')
  if (firstDash < 0) return null
  const secondDash = text.indexOf('-', firstDash + 1)
  const spanEnd = secondDash < 0 ? text.length : secondDash
  if (secondDash >= 0) {
    const thirdDash = text.indexOf('-', secondDash + 1)
    const samplingEnd = thirdDash < 0 ? text.length : thirdDash
    if (samplingEnd - secondDash !== 2) return null
    const sampling = text.charCodeAt(secondDash + 1)
    if (sampling !== 48 && sampling !== 49 && sampling !== 100) return null
    if (thirdDash >= 0 && (text.length - thirdDash - 1 !== 16 || !hexRun(text, thirdDash + 1, text.length))) return null
  }
  const traceId = b3TraceId(text, 0, firstDash)
  const spanId = traceId === null ? null : b3SpanId(text, firstDash + 1, spanEnd)
  return traceId !== null && spanId !== null ? { traceId, spanId, format: 'b3' } : null
}

/** B3 multiple headers: `X-B3-TraceId` and `X-B3-SpanId`, both required. */
export function parseB3Headers(rawTraceId: string, rawSpanId: string): TraceContext | null {
  const traceText = trimmed(rawTraceId)
  const spanText = trimmed(rawSpanId)
  const traceId = b3TraceId(traceText, 0, traceText.length)
  const spanId = traceId === null ? null : b3SpanId(spanText, 0, spanText.length)
  return traceId !== null && spanId !== null ? { traceId, spanId, format: 'b3' } : null
}

/** `text[from, to)`, hex of 1 to `max` characters in any case, as exactly `max` lower-case characters, or null. */
function paddedHex(text: string, from: number, to: number, max: number): string | null {
  if (to - from > max || !hexRun(text, from, to, true)) return null
  const id = text.slice(from, to).toLowerCase()
  return id.length === max ? id : id.padStart(max, '0')
}

/**
 * Jaeger's `uber-trace-id`: `traceid:spanid:parentspanid:flags`, ids hex of up to 32, 16 and 16 characters (Jaeger
 * clients drop leading zeros), flags one or two hex digits. A value sent through HTTP may have its colons as `%3A`.
 * The trace and span ids may not be zero; the parent may (a root span).
 */
export function parseUberTraceId(raw: string): TraceContext | null {
  let text = trimmed(raw)
  if (!text.includes(':') && /%3a/i.test(text)) text = text.replace(/%3a/gi, ':')
  const first = text.indexOf(':')
  const second = first < 0 ? -1 : text.indexOf(':', first + 1)
  const third = second < 0 ? -1 : text.indexOf(':', second + 1)
  if (third < 0 || text.indexOf(':', third + 1) >= 0) return null
  if (text.length - third - 1 > 2 || !hexRun(text, third + 1, text.length, true)) return null
  const traceId = paddedHex(text, 0, first, 32)
  const spanId = paddedHex(text, first + 1, second, 16)
  const parentId = paddedHex(text, second + 1, third, 16)
  if (traceId === null || spanId === null || parentId === null || traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null
  return { traceId, spanId, format: 'uber' }
}

/**
 * The trace context of a stored header table, or null. One pass over the names; the first valid context in the
 * order traceparent, b3, X-B3-TraceId/SpanId, uber-trace-id wins (an invalid traceparent falls through to b3).
 */
export function readTraceContext(headers: TypedTable | null | undefined): TraceContext | null {
  if (!headers || typeof headers !== 'object') return null
  let traceparent: TypedValue | undefined
  let b3: TypedValue | undefined
  let b3TraceIdValue: TypedValue | undefined
  let b3SpanIdValue: TypedValue | undefined
  let uber: TypedValue | undefined
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue
    // Cheapest test first: only names of these lengths can match.
    switch (name.length) {
      case 2:
        if (b3 === undefined && sameName(name, B3)) b3 = headers[name]
        break
      case 11:
        if (traceparent === undefined && sameName(name, TRACEPARENT)) traceparent = headers[name]
        else if (b3SpanIdValue === undefined && sameName(name, B3_SPAN_ID)) b3SpanIdValue = headers[name]
        break
      case 12:
        if (b3TraceIdValue === undefined && sameName(name, B3_TRACE_ID)) b3TraceIdValue = headers[name]
        break
      case 13:
        if (uber === undefined && sameName(name, UBER_TRACE_ID)) uber = headers[name]
        break
    }
  }
  if (traceparent === undefined && b3 === undefined && b3TraceIdValue === undefined && uber === undefined) return null
  const w3cText = headerText(traceparent)
  const w3c = w3cText === null ? null : parseTraceparent(w3cText)
  if (w3c) return w3c
  const b3Text = headerText(b3)
  const single = b3Text === null ? null : parseB3(b3Text)
  if (single) return single
  const multiTrace = headerText(b3TraceIdValue)
  const multiSpan = headerText(b3SpanIdValue)
  const multi = multiTrace === null || multiSpan === null ? null : parseB3Headers(multiTrace, multiSpan)
  if (multi) return multi
  const uberText = headerText(uber)
  return uberText === null ? null : parseUberTraceId(uberText)
}

/**
 * Headers that carry a trace context (lower case), which a replay told to start a new trace drops: the old trace's
 * W3C, B3 and Jaeger headers (docs/ARCHITECTURE.md#traces). Baggage is not a trace and is kept.
 */
const TRACE_HEADERS: readonly string[] = [
  TRACEPARENT, 'tracestate', B3, B3_TRACE_ID, B3_SPAN_ID, 'x-b3-parentspanid', 'x-b3-sampled', 'x-b3-flags', UBER_TRACE_ID,
]

/** Whether `name` (any case) is a trace-context header a new trace replaces. */
export function isTraceHeader(name: string): boolean {
  for (const header of TRACE_HEADERS) if (sameName(name, header)) return true
  return false
}

/** A fresh W3C traceparent (version 00, sampled) with random, non-zero trace and span ids. */
export function newTraceparent(): string {
  let bytes = randomBytes(24)
  while (bytes.subarray(0, 16).every((b) => b === 0) || bytes.subarray(16).every((b) => b === 0)) bytes = randomBytes(24)
  return `00-${bytes.toString('hex', 0, 16)}-${bytes.toString('hex', 16, 24)}-01`
}
