import { describe, expect, it } from 'vitest'
import { TYPED_TABLE, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { buildRow } from '@/lib/server/ingest/build-row'
import { buildJetStreamRow } from '@/lib/server/ingest/build-jetstream-row'
import { replayHeaders } from '@/lib/server/replay/publish-message'
import { messageTrace } from '@/lib/server/traces/message-trace'
import { isTraceHeader, newTraceparent, parseB3, parseB3Headers, parseTraceparent, parseUberTraceId, readTraceContext } from '@/lib/server/traces/trace-context'
import { isHttpTemplate, traceUrl, traceUrlTemplateSchema } from '@/lib/shared/schemas/trace-settings'
import { messageFilterSchema } from '@/lib/shared/schemas/message-filter'
import { filtersMaskedText, matchesRedacted } from '@/lib/server/messages/redacted-search'
import { createRedactor } from '@/lib/server/redaction/redactor'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN = '00f067aa0ba902b7'
const s = (v: string) => ({ t: 'S', v }) as const

describe('W3C traceparent', () => {
  it.each([
    [`00-${TRACE}-${SPAN}-01`, { traceId: TRACE, spanId: SPAN, format: 'w3c' }],
    [`  00-${TRACE}-${SPAN}-00 `, { traceId: TRACE, spanId: SPAN, format: 'w3c' }],
    // A later version may append fields after a dash.
    [`01-${TRACE}-${SPAN}-01-extra`, { traceId: TRACE, spanId: SPAN, format: 'w3c' }],
  ])('reads %j', (value, expected) => expect(parseTraceparent(value)).toEqual(expected))

  it.each([
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more after the flags', `00-${TRACE}-${SPAN}-01-extra`],
    ['a later version glued to more', `01-${TRACE}-${SPAN}-01x`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a short span id', `00-${TRACE}-${SPAN.slice(1)}-01`],
    ['underscores for dashes', `00_${TRACE}_${SPAN}_01`],
    ['non-hex', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ['nothing', ''],
  ])('ignores %s', (_, value) => expect(parseTraceparent(value)).toBeNull())
})

describe('B3', () => {
  it.each([
    [`${TRACE}-${SPAN}`, TRACE],
    [`${TRACE}-${SPAN}-1`, TRACE],
    [`${TRACE}-${SPAN}-d-${SPAN}`, TRACE],
    // A 64-bit trace id is left-padded to 32, as Tempo and Jaeger store it.
    [`a3ce929d0e0e4736-${SPAN}-0`, '0000000000000000a3ce929d0e0e4736'],
  ])('reads the single header %j', (value, traceId) => expect(parseB3(value)).toEqual({ traceId, spanId: SPAN, format: 'b3' }))

  it.each([
    ['a sampling decision alone', '1'],
    ['deny alone', 'd'],
    ['a 20-character trace id', `${TRACE.slice(0, 20)}-${SPAN}`],
    ['upper case', `${TRACE.toUpperCase()}-${SPAN}`],
    ['a bad sampling state', `${TRACE}-${SPAN}-x`],
    ['a short parent span id', `${TRACE}-${SPAN}-1-abc`],
    ['an all-zero trace id', `${'0'.repeat(32)}-${SPAN}`],
    ['no span id', `${TRACE}-`],
  ])('ignores %s', (_, value) => expect(parseB3(value)).toBeNull())

  it('reads X-B3-TraceId with X-B3-SpanId, and needs both to be valid', () => {
    expect(parseB3Headers(TRACE, SPAN)).toEqual({ traceId: TRACE, spanId: SPAN, format: 'b3' })
    expect(parseB3Headers('a3ce929d0e0e4736', SPAN)?.traceId).toBe('0000000000000000a3ce929d0e0e4736')
    expect(parseB3Headers(TRACE, 'nope')).toBeNull()
    expect(parseB3Headers('xyz', SPAN)).toBeNull()
  })
})

describe("Jaeger's uber-trace-id", () => {
  it.each([
    [`${TRACE}:${SPAN}:0:1`, TRACE, SPAN],
    // Jaeger clients drop leading zeros; ids are padded back, upper case is lowered.
    ['A3CE929D0E0E4736:f067aa0ba902b7:0:01', '0000000000000000a3ce929d0e0e4736', SPAN],
    [`${TRACE}%3A${SPAN}%3A0%3A1`, TRACE, SPAN],
  ])('reads %j', (value, traceId, spanId) => expect(parseUberTraceId(value)).toEqual({ traceId, spanId, format: 'uber' }))

  it.each([
    ['three fields', `${TRACE}:${SPAN}:1`],
    ['five fields', `${TRACE}:${SPAN}:0:1:x`],
    ['a 33-character trace id', `f${TRACE}:${SPAN}:0:1`],
    ['a 17-character span id', `${TRACE}:f${SPAN}:0:1`],
    ['a zero trace id', `0:${SPAN}:0:1`],
    ['a zero span id', `${TRACE}:0:0:1`],
    ['an empty parent', `${TRACE}:${SPAN}::1`],
    ['three-digit flags', `${TRACE}:${SPAN}:0:100`],
    ['non-hex', `${TRACE}:${SPAN}:0:zz`],
  ])('ignores %s', (_, value) => expect(parseUberTraceId(value)).toBeNull())
})

describe('the trace of a header table', () => {
  it('finds the headers whatever their case, and prefers traceparent, then b3, then X-B3-*, then uber-trace-id', () => {
    const all: TypedTable = {
      'Uber-Trace-Id': s(`${'1'.repeat(32)}:${SPAN}:0:1`),
      'X-B3-TraceId': s('2'.repeat(32)),
      'X-B3-SpanId': s(SPAN),
      B3: s(`${'3'.repeat(32)}-${SPAN}`),
      TraceParent: s(`00-${TRACE}-${SPAN}-01`),
    }
    expect(readTraceContext(all)).toEqual({ traceId: TRACE, spanId: SPAN, format: 'w3c' })
    const { TraceParent: _w3c, ...noW3c } = all
    expect(readTraceContext(noW3c)?.traceId).toBe('3'.repeat(32))
    const { B3: _b3, ...noB3 } = noW3c
    expect(readTraceContext(noB3)?.traceId).toBe('2'.repeat(32))
    const { 'X-B3-TraceId': _t, ...uberOnly } = noB3
    expect(readTraceContext(uberOnly)).toMatchObject({ traceId: '1'.repeat(32), format: 'uber' })
  })

  it('falls through an invalid value to the next header, and is null when nothing is valid', () => {
    expect(readTraceContext({ traceparent: s('garbage'), b3: s(`${TRACE}-${SPAN}`) })).toMatchObject({ traceId: TRACE, format: 'b3' })
    expect(readTraceContext({ traceparent: s('garbage'), b3: s('1') })).toBeNull()
    expect(readTraceContext({ 'x-b3-traceid': s(TRACE) })).toBeNull()
    expect(readTraceContext({})).toBeNull()
    expect(readTraceContext(null)).toBeNull()
  })

  it('reads a repeated NATS header by its first value, and no value that is not a string', () => {
    expect(readTraceContext({ traceparent: { t: 'A', v: [s(`00-${TRACE}-${SPAN}-01`), s('garbage')] } })?.traceId).toBe(TRACE)
    expect(readTraceContext({ traceparent: { t: 'x', b64: Buffer.from(`00-${TRACE}-${SPAN}-01`).toString('base64') } })).toBeNull()
    expect(readTraceContext({ traceparent: { t: 'I', v: 7 } })).toBeNull()
    expect(readTraceContext({ traceparent: { t: 'F', b64: '', tooDeep: true } })).toBeNull()
  })

  it('ignores look-alike names of the same length', () => {
    expect(readTraceContext({ tracepArenT: s(`00-${TRACE}-${SPAN}-01`) })?.traceId).toBe(TRACE)
    expect(readTraceContext({ traceparenx: s(`00-${TRACE}-${SPAN}-01`), bb: s(`${TRACE}-${SPAN}`) })).toBeNull()
  })
})

describe('ingest', () => {
  const amqp = (typed: TypedTable) =>
    ({
      content: Buffer.from('{}'),
      fields: { exchange: '', routingKey: 'orders.dlq', redelivered: false, deliveryTag: 1, consumerTag: 'c' },
      properties: { headers: Object.defineProperty({}, TYPED_TABLE, { value: typed }) },
    }) as never

  it('stores the trace and span of a RabbitMQ dead letter, and none for a message without one', () => {
    const row = buildRow({ queue: 'orders.dlq', message: amqp({ traceparent: s(`00-${TRACE}-${SPAN}-01`) }), maxBodyBytes: 1024 })
    expect([row.traceId, row.spanId]).toEqual([TRACE, SPAN])
    const none = buildRow({ queue: 'orders.dlq', message: amqp({ traceparent: s('00-bad') }), maxBodyBytes: 1024 })
    expect([none.traceId, none.spanId]).toEqual([null, null])
  })

  it('stores the trace of a JetStream failure from its NATS headers', () => {
    const row = buildJetStreamRow({
      sourceLabel: 'ORDERS/worker',
      failure: { kind: 'max-deliveries', advisoryId: 'a', at: new Date('2026-12-07T10:00:00Z'), stream: 'ORDERS', consumer: 'worker', streamSeq: 1, deliveries: 3, reason: null },
      message: { subject: 'orders.new', seq: 1, time: new Date('2026-12-07T10:00:00Z'), headerBlock: Buffer.from(`NATS/1.0\r\nUber-Trace-Id: ${TRACE}:${SPAN}:0:1\r\n\r\n`), data: Buffer.from('{}') },
      redelivered: false,
      maxBodyBytes: 1024,
    })
    expect([row.traceId, row.spanId]).toEqual([TRACE, SPAN])
  })
})

describe('a replayed copy', () => {
  const message = {
    id: '42',
    lineageOriginId: null,
    replayCount: 0,
    headers: {
      traceparent: s(`00-${TRACE}-${SPAN}-01`),
      tracestate: s('vendor=x'),
      'X-B3-TraceId': s(TRACE),
      'X-B3-SpanId': s(SPAN),
      'uber-trace-id': s(`${TRACE}:${SPAN}:0:1`),
      baggage: s('tenant=acme'),
      'x-lazarus-origin-trace': s('stale'),
      app: s('kept'),
    } satisfies TypedTable,
  }

  it('keeps its trace headers and names the trace it failed in', () => {
    const out = replayHeaders(message, { kind: 'replay', replayId: 'r', actor: 'a' })
    expect(out.traceparent).toEqual(message.headers.traceparent)
    expect(out['X-B3-TraceId']).toEqual(message.headers['X-B3-TraceId'])
    expect(out['x-lazarus-origin-trace']).toEqual(s(TRACE))
  })

  it('with newTrace, gets a fresh traceparent instead of its old trace headers, and keeps baggage', () => {
    const out = replayHeaders(message, { kind: 'replay', replayId: 'r', actor: 'a', newTrace: true })
    expect(Object.keys(out).filter(isTraceHeader)).toEqual(['traceparent'])
    const fresh = readTraceContext(out)
    expect(fresh?.format).toBe('w3c')
    expect(fresh?.traceId).not.toBe(TRACE)
    expect(out['x-lazarus-origin-trace']).toEqual(s(TRACE))
    expect(out.baggage).toEqual(s('tenant=acme'))
    expect(out.app).toEqual(s('kept'))
  })

  it('carries no origin trace when the message had none', () => {
    expect(replayHeaders({ ...message, headers: { app: s('x') } }, { kind: 'replay', replayId: 'r', actor: 'a' })['x-lazarus-origin-trace']).toBeUndefined()
  })

  it('fresh traceparents are valid and differ', () => {
    const [a, b] = [newTraceparent(), newTraceparent()]
    expect(parseTraceparent(a)).not.toBeNull()
    expect(a).not.toBe(b)
  })
})

describe('trace links', () => {
  it('fill in the ids URL-encoded, and accept only http and https templates with {traceId}', () => {
    expect(traceUrl('https://grafana.example/explore?q={traceId}&s={spanId}', { traceId: TRACE, spanId: null })).toBe(`https://grafana.example/explore?q=${TRACE}&s=`)
    expect(traceUrl('https://x.example/{traceId}', { traceId: 'a b/&', spanId: SPAN })).toBe('https://x.example/a%20b%2F%26')
    expect(isHttpTemplate('http://jaeger:16686/trace/{traceId}')).toBe(true)
    for (const bad of ['javascript:alert(1)//{traceId}', 'data:text/html,{traceId}', '/relative/{traceId}', 'ftp://x/{traceId}']) {
      expect(traceUrlTemplateSchema.safeParse(bad).success, bad).toBe(false)
    }
    expect(traceUrlTemplateSchema.safeParse('https://x.example/no-placeholder').success).toBe(false)
  })

  it('on display: the stored ids, else those the headers carry; redacted callers only what redaction left', () => {
    const headers: TypedTable = { traceparent: s(`00-${'a'.repeat(32)}-${SPAN}-01`) }
    const template = 'https://t.example/{traceId}'
    expect(messageTrace({ stored: { traceId: TRACE, spanId: SPAN }, headers, template, redacted: false })).toEqual({ traceId: TRACE, spanId: SPAN, url: `https://t.example/${TRACE}` })
    expect(messageTrace({ stored: { traceId: null, spanId: null }, headers, template: null, redacted: false })).toEqual({ traceId: 'a'.repeat(32), spanId: SPAN, url: null })
    expect(messageTrace({ stored: { traceId: TRACE, spanId: SPAN }, headers: {}, template, redacted: true })).toBeNull()
  })
})

describe('the traceId filter', () => {
  it('takes 32 or 16 hex characters in any case, as stored', () => {
    expect(messageFilterSchema.parse({ traceId: TRACE.toUpperCase() }).traceId).toBe(TRACE)
    expect(messageFilterSchema.parse({ traceId: 'a3ce929d0e0e4736' }).traceId).toBe('0000000000000000a3ce929d0e0e4736')
    expect(messageFilterSchema.safeParse({ traceId: 'xyz' }).success).toBe(false)
    expect(messageFilterSchema.safeParse({ traceId: TRACE.slice(1) }).success).toBe(false)
  })
})

describe('the traceId filter for a caller who sees messages redacted', () => {
  const fields = (headers: TypedTable) => ({ errorType: null, errorMessage: null, entityKey: null, bodyText: null, bodyEncoding: 'json', headersJson: JSON.stringify(headers) })
  const headers: TypedTable = { traceparent: s(`00-${TRACE}-${SPAN}-01`) }

  it('matches while redaction leaves the trace header, never inside a masked one', () => {
    expect(filtersMaskedText({ traceId: TRACE })).toBe(true)
    expect(matchesRedacted(fields(headers), { traceId: TRACE }, createRedactor([]))).toBe(true)
    expect(matchesRedacted(fields(headers), { traceId: TRACE }, createRedactor([{ kind: 'key', value: 'traceparent', enabled: true }]))).toBe(false)
    expect(matchesRedacted(fields({}), { traceId: TRACE }, createRedactor([]))).toBe(false)
  })
})
