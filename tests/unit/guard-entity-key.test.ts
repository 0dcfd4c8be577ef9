import { describe, expect, it } from 'vitest'
import { extractEntityKey, parseJsonPointer, type KeyedMessage } from '@/packages/guard/src/entity-key'
import type { EntityKeyRule } from '@/packages/guard/src/protocol'
import { normaliseDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'

const ORDER = {
  order: { id: 'ORD-42', lines: [{ sku: 'A-1' }, { sku: 'B-2' }], 'a/b': 'slash', 'm~n': 'tilde', '': 'empty key', n: 17, ok: true, none: null, padded: '  P-1  ' },
}
const JSON_BODY = Buffer.from(JSON.stringify(ORDER))

function message(body: Buffer | string = JSON_BODY, extra: { contentEncoding?: string; headers?: Record<string, unknown> } = {}): KeyedMessage & { properties: Record<string, unknown> } {
  return {
    content: typeof body === 'string' ? Buffer.from(body) : body,
    properties: {
      contentType: 'application/json',
      contentEncoding: extra.contentEncoding,
      correlationId: 'corr-1',
      messageId: 'msg-1',
      type: 'OrderPlaced',
      appId: '  ',
      userId: 'svc',
      replyTo: undefined,
      headers: { 'x-tenant': Buffer.from('tenant-7'), 'x-order-no': 123, 'x-obj': { a: 1 }, 'x-long': 'x'.repeat(2000), 'x-entity-key': ' E-9 ', 'x-ts': { '!': 'timestamp', value: 1 }, ...extra.headers },
    },
  }
}

const cases: Array<[string, EntityKeyRule | null, ReturnType<typeof message>, string | null]> = [
  ['property', { kind: 'property', name: 'correlationId' }, message(), 'corr-1'],
  ['blank property', { kind: 'property', name: 'appId' }, message(), null],
  ['missing property', { kind: 'property', name: 'replyTo' }, message(), null],
  ['Buffer header', { kind: 'header', name: 'x-tenant' }, message(), 'tenant-7'],
  ['number header', { kind: 'header', name: 'x-order-no' }, message(), '123'],
  ['object header is not a key', { kind: 'header', name: 'x-obj' }, message(), null],
  ['tagged amqplib value is not a key', { kind: 'header', name: 'x-ts' }, message(), null],
  ['oversized header is not a key', { kind: 'header', name: 'x-long' }, message(), null],
  ['missing header', { kind: 'header', name: 'x-none' }, message(), null],
  ['prototype header name', { kind: 'header', name: '__proto__' }, message(), null],
  ['no rule reads x-entity-key, trimmed', null, message(), 'E-9'],
  ['pointer to a string', { kind: 'jsonPointer', pointer: '/order/id' }, message(), 'ORD-42'],
  ['pointer into an array', { kind: 'jsonPointer', pointer: '/order/lines/1/sku' }, message(), 'B-2'],
  ['escaped slash', { kind: 'jsonPointer', pointer: '/order/a~1b' }, message(), 'slash'],
  ['escaped tilde', { kind: 'jsonPointer', pointer: '/order/m~0n' }, message(), 'tilde'],
  ['empty key', { kind: 'jsonPointer', pointer: '/order/' }, message(), 'empty key'],
  ['number', { kind: 'jsonPointer', pointer: '/order/n' }, message(), '17'],
  ['boolean', { kind: 'jsonPointer', pointer: '/order/ok' }, message(), 'true'],
  ['null is not a key', { kind: 'jsonPointer', pointer: '/order/none' }, message(), null],
  ['object is not a key', { kind: 'jsonPointer', pointer: '/order' }, message(), null],
  ['trimmed value', { kind: 'jsonPointer', pointer: '/order/padded' }, message(), 'P-1'],
  ['array index out of range', { kind: 'jsonPointer', pointer: '/order/lines/7/sku' }, message(), null],
  ['non-numeric array index', { kind: 'jsonPointer', pointer: '/order/lines/x' }, message(), null],
  ['URI fragment form', { kind: 'jsonPointer', pointer: '#/order/id' }, message(), 'ORD-42'],
  ['body with a BOM', { kind: 'jsonPointer', pointer: '/order/id' }, message(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), JSON_BODY])), 'ORD-42'],
  ['compressed body is not read', { kind: 'jsonPointer', pointer: '/order/id' }, message(JSON_BODY, { contentEncoding: 'gzip' }), null],
  ['charset-like encoding is identity', { kind: 'jsonPointer', pointer: '/order/id' }, message(JSON_BODY, { contentEncoding: 'UTF-8' }), 'ORD-42'],
  ['invalid JSON', { kind: 'jsonPointer', pointer: '/order/id' }, message('{"order": '), null],
  ['not UTF-8', { kind: 'jsonPointer', pointer: '/order/id' }, message(Buffer.from([0xff, 0xfe, 0x7b])), null],
  ['invalid pointer', { kind: 'jsonPointer', pointer: 'order/id' }, message(), null],
  ['bad escape in pointer', { kind: 'jsonPointer', pointer: '/order/~2' }, message(), null],
  ['prototype key in the body', { kind: 'jsonPointer', pointer: '/constructor' }, message('{"a":1}'), null],
]

describe('guard entity-key extractor', () => {
  for (const [name, rule, msg, expected] of cases) {
    it(name, () => expect(extractEntityKey(rule, msg)).toBe(expected))
  }

  // A pause is created from keys the drainer derived; the guard must find the same key in the live message.
  for (const [name, rule, msg] of cases) {
    it(`agrees with the drainer: ${name}`, () => {
      const derived = normaliseDelivery({
        queue: 'orders.dlq',
        exchange: '',
        routingKey: 'orders.dlq',
        redelivered: false,
        properties: Object.fromEntries(Object.entries(msg.properties).filter(([k, v]) => k !== 'headers' && v !== undefined)),
        headers: msg.properties.headers as never,
        body: Buffer.from(msg.content),
        entityKeyRule: rule,
      })
      expect(extractEntityKey(rule, msg)).toBe(derived.entityKey)
    })
  }

  it('parses pointers like RFC 6901', () => {
    expect(parseJsonPointer('')).toEqual([])
    expect(parseJsonPointer('/a~1b/m~0n')).toEqual(['a/b', 'm~n'])
    expect(parseJsonPointer('#/a%20b')).toEqual(['a b'])
    expect(parseJsonPointer('#%E0%A4%A')).toBeNull()
    expect(parseJsonPointer('a')).toBeNull()
  })
})
