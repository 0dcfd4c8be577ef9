import { describe, expect, it, vi } from 'vitest'
import { TYPED_TABLE, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { buildRow, classifyBody } from '@/lib/server/ingest/build-row'

function message(body: Buffer, typed: TypedTable = {}, properties: Record<string, unknown> = {}) {
  const headers = Object.defineProperty({}, TYPED_TABLE, { value: typed })
  return {
    content: body,
    fields: { exchange: '', routingKey: 'orders.dlq', redelivered: false, deliveryTag: 1, consumerTag: 'c' },
    properties: { headers, ...properties },
  } as never
}

const build = (body: Buffer, typed?: TypedTable, maxBodyBytes = 1024) => buildRow({ queue: 'orders.dlq', message: message(body, typed), maxBodyBytes, now: new Date('2026-11-30T12:00:00Z') })

describe('buildRow', () => {
  it('classifies bodies: JSON, text, binary (including valid UTF-8 with control bytes)', () => {
    expect(classifyBody(Buffer.from('{"a":1}')).encoding).toBe('json')
    expect(classifyBody(Buffer.from('plain text\nwith lines')).encoding).toBe('text')
    expect(classifyBody(Buffer.from([0xff, 0xfe])).encoding).toBe('binary')
    expect(classifyBody(Buffer.from([0x0a, 0x03, 0x66, 0x6f, 0x6f])).encoding).toBe('binary')
    expect(classifyBody(Buffer.alloc(0)).encoding).toBe('text')
  })

  it('parses a JSON body once per message, however many rules read it (entity key and version by JSON pointer)', () => {
    const body = Buffer.from('{"order":{"id":"o-7","version":3},"error":"boom"}')
    const parse = vi.spyOn(JSON, 'parse')
    try {
      const row = buildRow({
        queue: 'orders.dlq', message: message(body), maxBodyBytes: 1024, now: new Date('2026-11-30T12:00:00Z'),
        entityKeyRule: { kind: 'jsonPointer', pointer: '/order/id' },
        entityVersionRule: { kind: 'jsonPointer', pointer: '/order/version', type: 'number' },
      })
      expect(row.entityKey).toBe('o-7')
      expect(row.entityVersion).toBe(3)
      expect(parse.mock.calls.filter(([text]) => typeof text === 'string' && text.includes('"o-7"'))).toHaveLength(1)
    } finally {
      parse.mockRestore()
    }
  })

  it('stores oversized bodies whole and flags them', () => {
    const body = Buffer.alloc(4096, 'x')
    const row = build(body, {}, 1024)
    expect(row.body.equals(body)).toBe(true)
    expect(row.flags).toContain('oversized')
  })

  it('flags malformed JSON and keeps it readable as text', () => {
    const row = build(Buffer.from('{"orderId": 12,'))
    expect(row.bodyEncoding).toBe('text')
    expect(row.flags).toContain('malformed-json')
    expect(row.bodyPreview).toBe('{"orderId": 12,')
  })

  it('never puts NUL into text columns', () => {
    const row = build(Buffer.from('ok'), { 'x-error-message': { t: 'S', v: 'bad\u0000value' } })
    expect(JSON.stringify(row)).not.toContain('\\u0000')
    expect(row.headersJson).not.toContain('\\u0000')
  })

  it('gives the same delivery the same fingerprint and a different body a different one', () => {
    const typed: TypedTable = { 'x-error-type': { t: 'S', v: 'TimeoutException' } }
    const a = build(Buffer.from('{"n":1}'), typed)
    const b = build(Buffer.from('{"n":1}'), typed)
    const c = build(Buffer.from('{"n":2}'), typed)
    expect(a.fingerprint.equals(b.fingerprint)).toBe(true)
    expect(a.fingerprint.equals(c.fingerprint)).toBe(false)
  })

  it('falls back to the ingestion time when nothing says when the message failed, and ignores absurd dates', () => {
    const row = build(Buffer.from('x'), { 'x-death': { t: 'A', v: [{ t: 'F', v: { queue: { t: 'S', v: 'q' }, reason: { t: 'S', v: 'rejected' }, count: { t: 'l', v: '1' }, time: { t: 'T', v: '99999999999999' } } }] } })
    expect(row.failedAt.getTime()).toBeLessThan(Date.parse('2100-01-01'))
    expect(row.flags.some((f) => f.startsWith('x-death'))).toBe(true)
  })
})
