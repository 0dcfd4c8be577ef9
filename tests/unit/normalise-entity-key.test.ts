import { describe, expect, it } from 'vitest'
import { readBody } from '@/lib/server/ingest/normalise/delivery-body'
import { extractEntityKey, parseJsonPointer } from '@/lib/server/ingest/normalise/entity-key'
import { normaliseDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'
import type { DeliveryView } from '@/lib/server/ingest/types'
import type { EntityKeyRule } from '@/lib/shared/schemas/source'

const NOW = new Date('2024-03-01T12:00:00Z')

const ORDER = {
  order: { id: 'ORD-42', lines: [{ sku: 'A-1' }, { sku: 'B-2' }], 'a/b': 'slash', 'm~n': 'tilde', '': 'empty key', n: 17, ok: true, none: null },
}

function source(body: Buffer | string, contentEncoding?: string) {
  const reader = readBody(typeof body === 'string' ? Buffer.from(body) : body, contentEncoding)
  return {
    properties: { correlationId: 'corr-1', messageId: 'msg-1', type: 'OrderPlaced', appId: '  ', userId: 'svc' },
    headers: { 'x-tenant': Buffer.from('tenant-7'), 'x-order-no': 123n, 'x-obj': { a: 1 }, 'x-long': 'x'.repeat(2000) },
    json: () => reader.json(),
  }
}

describe('extractEntityKey', () => {
  const json = JSON.stringify(ORDER)
  const cases: Array<[string, EntityKeyRule, Buffer | string, string | null]> = [
    ['property', { kind: 'property', name: 'correlationId' }, json, 'corr-1'],
    ['blank property', { kind: 'property', name: 'appId' }, json, null],
    ['missing property', { kind: 'property', name: 'replyTo' }, json, null],
    ['Buffer header', { kind: 'header', name: 'x-tenant' }, json, 'tenant-7'],
    ['bigint header', { kind: 'header', name: 'x-order-no' }, json, '123'],
    ['object header is not a key', { kind: 'header', name: 'x-obj' }, json, null],
    ['oversized header is not a key', { kind: 'header', name: 'x-long' }, json, null],
    ['missing header', { kind: 'header', name: 'x-none' }, json, null],
    ['prototype header name', { kind: 'header', name: '__proto__' }, json, null],
    ['pointer to a string', { kind: 'jsonPointer', pointer: '/order/id' }, json, 'ORD-42'],
    ['pointer into an array', { kind: 'jsonPointer', pointer: '/order/lines/1/sku' }, json, 'B-2'],
    ['escaped slash', { kind: 'jsonPointer', pointer: '/order/a~1b' }, json, 'slash'],
    ['escaped tilde', { kind: 'jsonPointer', pointer: '/order/m~0n' }, json, 'tilde'],
    ['empty key', { kind: 'jsonPointer', pointer: '/order/' }, json, 'empty key'],
    ['number', { kind: 'jsonPointer', pointer: '/order/n' }, json, '17'],
    ['boolean', { kind: 'jsonPointer', pointer: '/order/ok' }, json, 'true'],
    ['null', { kind: 'jsonPointer', pointer: '/order/none' }, json, null],
    ['object is not a key', { kind: 'jsonPointer', pointer: '/order' }, json, null],
    ['whole document', { kind: 'jsonPointer', pointer: '' }, '"just-a-string"', 'just-a-string'],
    ['URI fragment form', { kind: 'jsonPointer', pointer: '#/order/id' }, json, 'ORD-42'],
    ['array index out of range', { kind: 'jsonPointer', pointer: '/order/lines/5/sku' }, json, null],
    ['leading-zero index', { kind: 'jsonPointer', pointer: '/order/lines/01/sku' }, json, null],
    ['"-" index', { kind: 'jsonPointer', pointer: '/order/lines/-' }, json, null],
    ['prototype path', { kind: 'jsonPointer', pointer: '/__proto__/toString' }, json, null],
    ['constructor path', { kind: 'jsonPointer', pointer: '/order/constructor/name' }, json, null],
    ['invalid pointer syntax', { kind: 'jsonPointer', pointer: 'order/id' }, json, null],
    ['bad escape', { kind: 'jsonPointer', pointer: '/order/~2' }, json, null],
    ['invalid JSON body', { kind: 'jsonPointer', pointer: '/order/id' }, '{"order": {"id": ', null],
    ['binary body', { kind: 'jsonPointer', pointer: '/order/id' }, Buffer.from([0xff, 0xfe, 0x00, 0x81]), null],
    ['compressed body', { kind: 'jsonPointer', pointer: '/order/id' }, json, null],
    ['BOM before JSON', { kind: 'jsonPointer', pointer: '/order/id' }, `\uFEFF${json}`, 'ORD-42'],
    ['empty body', { kind: 'jsonPointer', pointer: '/order/id' }, '', null],
  ]
  it.each(cases)('%s', (name, rule, body, expected) => {
    expect(extractEntityKey(rule, source(body, name === 'compressed body' ? 'gzip' : undefined))).toBe(expected)
  })

  it('rejects rules of the wrong shape', () => {
    const hostile = [null, undefined, {}, { kind: 'sql', query: 'x' }, { kind: 'property', name: 'headers' }, { kind: 'header', name: 42 }, { kind: 'jsonPointer' }]
    for (const rule of hostile) expect(extractEntityKey(rule as EntityKeyRule, source('{}'))).toBeNull()
  })

  it('parses RFC 6901 pointers', () => {
    expect(parseJsonPointer('')).toEqual([])
    expect(parseJsonPointer('/a~1b/c~0d/~01')).toEqual(['a/b', 'c~d', '~1'])
    expect(parseJsonPointer('#/a%20b')).toEqual(['a b'])
    expect(parseJsonPointer('#%E0%A4%A')).toBeNull()
    expect(parseJsonPointer('a')).toBeNull()
  })
})

describe('entity key in normaliseDelivery', () => {
  const base: DeliveryView = {
    queue: 'orders.dlq',
    exchange: '',
    routingKey: '',
    redelivered: false,
    properties: { correlationId: 'corr-9' },
    headers: { 'x-entity-key': 'from-header' },
    body: Buffer.from(JSON.stringify(ORDER)),
  }

  it('uses the source rule when there is one', () => {
    expect(normaliseDelivery({ ...base, entityKeyRule: { kind: 'jsonPointer', pointer: '/order/id' } }, { now: NOW }).entityKey).toBe('ORD-42')
  })

  it('does not fall back to x-entity-key when the rule finds nothing', () => {
    expect(normaliseDelivery({ ...base, entityKeyRule: { kind: 'jsonPointer', pointer: '/nope' } }, { now: NOW }).entityKey).toBeNull()
  })

  it('uses x-entity-key when the source has no rule', () => {
    expect(normaliseDelivery({ ...base, entityKeyRule: null }, { now: NOW }).entityKey).toBe('from-header')
    expect(normaliseDelivery(base, { now: NOW }).entityKey).toBe('from-header')
  })

  it('flags an invalid rule', () => {
    const result = normaliseDelivery({ ...base, entityKeyRule: { kind: 'jsonPointer', pointer: 'no-slash' } }, { now: NOW })
    expect(result.entityKey).toBeNull()
    expect(result.flags).toContain('entity-key-rule-invalid')
  })
})
