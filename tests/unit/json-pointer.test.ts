import { describe, expect, it } from 'vitest'
import { isArrayIndex, pointerOf, pointerProblem, pointerTokens, resolvePointer } from '@/lib/shared/json-pointer'
import { describeFieldFilter, fieldFilterParam, parseFieldFilter, type FieldCondition } from '@/lib/shared/schemas/field-filter'
import { countMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { saveViewSchema } from '@/lib/shared/schemas/saved-view'
import { selectionSchema } from '@/lib/shared/schemas/selection'

describe('JSON Pointers (RFC 6901)', () => {
  it('splits and unescapes tokens: ~1 is a slash, ~0 a tilde, and ~01 is the two characters ~1', () => {
    expect(pointerTokens('/order/customer')).toEqual(['order', 'customer'])
    expect(pointerTokens('/a~1b/m~0n/~01')).toEqual(['a/b', 'm~n', '~1'])
    expect(pointerTokens('/lines/0/sku')).toEqual(['lines', '0', 'sku'])
    // An empty token is a member named "" (RFC 6901 §5: "/" names the key "").
    expect(pointerTokens('/')).toEqual([''])
    expect(pointerTokens('//x')).toEqual(['', 'x'])
  })

  it('escapes tokens back to the same pointer', () => {
    for (const pointer of ['/order/customer', '/a~1b/m~0n/~01', '/', '/lines/0/sku', '/ü ä/"q"'])
      expect(pointerOf(pointerTokens(pointer))).toBe(pointer)
  })

  it('refuses what is not a pointer a filter takes, saying why', () => {
    expect(pointerProblem('/order/customer')).toBeNull()
    expect(pointerProblem('order/customer')).toMatch(/starts with "\/"/)
    expect(pointerProblem('')).toMatch(/starts with "\/"/)
    expect(pointerProblem('/a~2')).toMatch(/~0/)
    expect(pointerProblem('/a~')).toMatch(/~0/)
    expect(pointerProblem(`/${'x'.repeat(600)}`)).toMatch(/512 characters/)
    expect(pointerProblem('/a'.repeat(33))).toMatch(/32 levels/)
    expect(pointerProblem('/a'.repeat(32))).toBeNull()
  })

  it('names array elements by canonical index only', () => {
    expect(['0', '7', '10', '123456789'].every(isArrayIndex)).toBe(true)
    expect(['-1', '01', '+1', ' 1', '1.0', '', '-', '1234567890'].some(isArrayIndex)).toBe(false)
    const doc = { lines: [{ sku: 'A' }, { sku: 'B' }], map: { '01': 'key 01', '-1': 'key -1' } }
    expect(resolvePointer(doc, ['lines', '1', 'sku'])).toBe('B')
    expect(resolvePointer(doc, ['lines', '01', 'sku'])).toBeUndefined()
    expect(resolvePointer(doc, ['lines', '-1'])).toBeUndefined()
    expect(resolvePointer(doc, ['lines', '-'])).toBeUndefined()
    // On an object, the same tokens are member names.
    expect(resolvePointer(doc, ['map', '01'])).toBe('key 01')
    expect(resolvePointer(doc, ['map', '-1'])).toBe('key -1')
  })

  it('reads own members only: no array length, no prototype', () => {
    const doc = JSON.parse('{"lines":[1,2],"o":{},"__proto__":{"x":1}}') as unknown
    expect(resolvePointer(doc, ['lines', 'length'])).toBeUndefined()
    expect(resolvePointer(doc, ['o', 'toString'])).toBeUndefined()
    expect(resolvePointer(doc, ['o', 'constructor'])).toBeUndefined()
    expect(resolvePointer(doc, ['__proto__', 'x'])).toBe(1)
    expect(resolvePointer(doc, ['missing', 'x'])).toBeUndefined()
    expect(resolvePointer({ a: null }, ['a'])).toBeNull()
    expect(resolvePointer({ a: 'text' }, ['a', '0'])).toBeUndefined()
  })
})

describe('body field filters (b.)', () => {
  it('reads each operator from the parameter name, as headers do', () => {
    expect(parseFieldFilter('b./order/customer', '42')).toEqual({ on: 'body', name: '/order/customer', op: 'eq', value: '42' })
    expect(parseFieldFilter('b./type^', 'refund.')).toEqual({ on: 'body', name: '/type', op: 'prefix', value: 'refund.' })
    expect(parseFieldFilter('b./error?', 'true')).toEqual({ on: 'body', name: '/error', op: 'exists' })
    expect(parseFieldFilter('b./error?', 'false')).toEqual({ on: 'body', name: '/error', op: 'missing' })
  })

  it('round-trips through the parameter form and reads as people write it', () => {
    const conditions: FieldCondition[] = [
      { on: 'body', name: '/order/customer', op: 'eq', value: '42' },
      { on: 'body', name: '/a~1b/0', op: 'prefix', value: 'x' },
      { on: 'body', name: '/error', op: 'exists' },
      { on: 'body', name: '/error', op: 'missing' },
    ]
    for (const condition of conditions) expect(countMessagesQuerySchema.parse(Object.fromEntries([fieldFilterParam(condition)])).match).toEqual([condition])
    expect(conditions.map(describeFieldFilter)).toEqual(['b./order/customer = 42', 'b./a~1b/0 starts with x', 'b./error exists', 'b./error does not exist'])
  })

  it('refuses a bad pointer, an operator headers do not have, and a bad presence value, with a 400 naming it', () => {
    const refused = (query: Record<string, string>) => countMessagesQuerySchema.safeParse(query)
    expect(refused({ 'b.order': '42' }).error?.issues[0].message).toMatch(/starts with "\/"/)
    expect(refused({ 'b./a~2': '42' }).error?.issues[0].message).toMatch(/~0/)
    const bad: Record<string, string>[] = [{ 'b./n>': '5' }, { 'b./n<': '5' }, { 'b./x?': 'yes' }, { 'b./x': '' }, { 'b./x\u0000': 'v' }]
    for (const query of bad) {
      expect(refused(query).success, JSON.stringify(query)).toBe(false)
    }
  })

  it('saved views and selections take them as the list does', () => {
    expect(saveViewSchema.safeParse({ name: 'refunds of 42', query: '?b.%2Forder%2Fcustomer=42&b.%2Ftype%5E=refund.' }).success).toBe(true)
    expect(saveViewSchema.safeParse({ name: 'bad', query: 'b.order=42' }).success).toBe(false)
    expect(selectionSchema.parse({ filter: { 'b./order/customer': '42' } })).toEqual({ filter: { match: [{ on: 'body', name: '/order/customer', op: 'eq', value: '42' }] } })
  })
})
