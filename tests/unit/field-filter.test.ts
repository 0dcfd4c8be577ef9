import { describe, expect, it } from 'vitest'
import { describeFieldFilter, fieldFilterParam, liftFieldFilters, parseFieldFilter, type FieldCondition } from '@/lib/shared/schemas/field-filter'
import { filterParams } from '@/lib/shared/schemas/message-filter'
import { countMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { selectionSchema } from '@/lib/shared/schemas/selection'

describe('field filter syntax', () => {
  it('reads each operator from the parameter name', () => {
    expect(parseFieldFilter('h.tenant', 'acme')).toEqual({ on: 'header', name: 'tenant', op: 'eq', value: 'acme' })
    expect(parseFieldFilter('h.tenant^', 'ac')).toEqual({ on: 'header', name: 'tenant', op: 'prefix', value: 'ac' })
    expect(parseFieldFilter('h.tenant?', 'true')).toEqual({ on: 'header', name: 'tenant', op: 'exists' })
    expect(parseFieldFilter('h.tenant?', 'false')).toEqual({ on: 'header', name: 'tenant', op: 'missing' })
    expect(parseFieldFilter('p.correlationId', 'abc')).toEqual({ on: 'property', name: 'correlationId', op: 'eq', value: 'abc' })
    expect(parseFieldFilter('death.count>', '5')).toEqual({ on: 'death', name: 'count', op: 'gte', value: '5' })
    expect(parseFieldFilter('death.count<', '5')).toEqual({ on: 'death', name: 'count', op: 'lte', value: '5' })
    expect(parseFieldFilter('death.reason', 'expired')).toEqual({ on: 'death', name: 'reason', op: 'eq', value: 'expired' })
  })

  it('keeps dots and other characters of a header name, and leaves other parameters alone', () => {
    expect(parseFieldFilter('h.x-context.user id', 'u')).toEqual({ on: 'header', name: 'x-context.user id', op: 'eq', value: 'u' })
    // A one-character name that is an operator character is the name.
    expect(parseFieldFilter('h.^', 'x')).toEqual({ on: 'header', name: '^', op: 'eq', value: 'x' })
    expect(parseFieldFilter('status', 'dead')).toBeNull()
    expect(parseFieldFilter('h.', 'x')).toBeNull()
    expect(parseFieldFilter('hx.tenant', 'x')).toBeNull()
  })

  it('round-trips through the parameter form', () => {
    const conditions: FieldCondition[] = [
      { on: 'header', name: 'tenant', op: 'eq', value: 'acme' },
      { on: 'header', name: 'tenant', op: 'prefix', value: 'ac' },
      { on: 'header', name: 'tenant', op: 'exists' },
      { on: 'property', name: 'type', op: 'missing' },
      { on: 'death', name: 'count', op: 'gte', value: '5' },
      { on: 'death', name: 'queue', op: 'eq', value: 'orders' },
    ]
    for (const condition of conditions) expect(parseFieldFilter(...fieldFilterParam(condition))).toEqual(condition)
    expect(conditions.map(describeFieldFilter)).toEqual([
      'h.tenant = acme', 'h.tenant starts with ac', 'h.tenant exists', 'p.type does not exist', 'death.count ≥ 5', 'death.queue = orders',
    ])
  })

  it('lifts parameters into match, after conditions already there', () => {
    expect(liftFieldFilters({ status: 'dead', 'h.tenant': 'acme', match: [{ on: 'header', name: 'a', op: 'exists' }] })).toEqual({
      status: 'dead',
      match: [{ on: 'header', name: 'a', op: 'exists' }, { on: 'header', name: 'tenant', op: 'eq', value: 'acme' }],
    })
    const plain = { status: 'dead' }
    expect(liftFieldFilters(plain)).toBe(plain)
    expect(liftFieldFilters('x')).toBe('x')
  })

  it('the schemas take the parameters, and refuse what they cannot read', () => {
    expect(countMessagesQuerySchema.parse({ 'h.tenant': 'acme', 'death.count>': '5', source: '1' })).toEqual({
      source: '1',
      match: [{ on: 'header', name: 'tenant', op: 'eq', value: 'acme' }, { on: 'death', name: 'count', op: 'gte', value: '5' }],
    })
    for (const bad of [{ 'p.bogus': 'x' }, { 'death.count>': '-1' }, { 'death.queue^': 'o' }, { 'h.tenant?': 'yes' }, { 'h.tenant': '' }, { 'h.a': 'x\u0000' }]) {
      expect(countMessagesQuerySchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false)
    }
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`h.k${i}`, 'v']))
    expect(countMessagesQuerySchema.safeParse(many).success).toBe(false)
  })

  it('a stored selection parses again, and prints back as parameters', () => {
    const selection = selectionSchema.parse({ filter: { 'p.appId^': 'sh', status: 'dead' } })
    expect(selectionSchema.parse(JSON.parse(JSON.stringify(selection)))).toEqual(selection)
    expect('filter' in selection && filterParams(selection.filter)).toEqual([['status', 'dead'], ['p.appId^', 'sh']])
  })
})
