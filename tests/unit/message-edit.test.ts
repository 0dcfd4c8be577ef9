import { describe, expect, it } from 'vitest'
import { base64Of, emptyHeaderRow, headerChanges, headerRowError, headersOf, parseJsonError, propertyChanges, propertyEdits, propertyTexts, rowsOf } from '@/components/messages/message-edit'

const stored = { 'retry-count': { t: 'l', v: '3' }, tenant: { t: 'S', v: 'acme' }, nested: { t: 'F', v: { a: { t: 'I', v: 1 } } } }

describe('the message editor: what it sends and compares (components/messages/message-edit.ts)', () => {
  it('sends untouched headers exactly as stored, and edited ones in their chosen type', () => {
    const rows = rowsOf(stored)
    expect(new Set(rows.map((r) => r.key)).size).toBe(3)
    expect(headersOf(rows)).toEqual({ headers: Object.entries(stored).map(([name, value]) => ({ name, value })) })
    const edited = rows.map((r) => (r.name === 'retry-count' ? { ...r, type: 'I', text: '0' } : r))
    expect(headersOf(edited)).toMatchObject({ headers: [{ name: 'retry-count', value: { t: 'I', v: 0 } }, { name: 'tenant' }, { name: 'nested' }] })
  })

  it('refuses a header without a name, a name twice, or a value that is not of its type', () => {
    const rows = rowsOf(stored)
    expect(headersOf([...rows, emptyHeaderRow()])).toEqual({ error: 'A header needs a name' })
    expect(headersOf([...rows, { ...emptyHeaderRow(), name: 'tenant' }])).toEqual({ error: 'Header "tenant" is named twice' })
    const bad = { ...emptyHeaderRow(), name: 'n', type: 'I', text: 'twelve' }
    expect(headerRowError(bad)).toMatch(/whole number/)
    expect(headersOf([bad])).toEqual({ error: `Header "n": ${headerRowError(bad)}` })
    expect(rows.map(headerRowError)).toEqual([null, null, null])
  })

  it('lists the headers removed, changed and added, as the revision diff does', () => {
    const after = [
      { name: 'tenant', value: { t: 'S', v: 'globex' } },
      { name: 'nested', value: stored.nested },
      { name: 'fixed-by', value: { t: 'S', v: 'ops' } },
    ]
    expect(headerChanges(stored, after)).toEqual([
      { name: 'retry-count', change: 'removed', before: stored['retry-count'] },
      { name: 'tenant', change: 'changed', before: stored.tenant, after: { t: 'S', v: 'globex' } },
      { name: 'fixed-by', change: 'added', after: { t: 'S', v: 'ops' } },
    ])
  })

  it('sends only the properties whose text changed: numbers as numbers, an emptied one as null', () => {
    const base = { contentType: 'application/json', priority: 3, messageId: 'm-1' }
    const texts = propertyTexts(base)
    expect(texts).toMatchObject({ contentType: 'application/json', priority: '3', messageId: 'm-1', type: '' })
    expect(propertyEdits(base, texts)).toEqual({})
    const edits = propertyEdits(base, { ...texts, priority: '5', messageId: '', type: 'order.fixed' })
    expect(edits).toEqual({ priority: 5, messageId: null, type: 'order.fixed' })
    expect(propertyChanges(base, edits)).toEqual([
      { name: 'type', before: null, after: 'order.fixed' },
      { name: 'messageId', before: 'm-1', after: null },
      { name: 'priority', before: 3, after: 5 },
    ])
    expect(propertyChanges(base, {})).toEqual([])
  })

  it('says why a JSON text does not parse, and turns bytes into base64', () => {
    expect(parseJsonError('{"a": 1}')).toBeNull()
    expect(parseJsonError('{"a": }')).toEqual(expect.any(String))
    const bytes = new Uint8Array(70_000).map((_, i) => i % 256)
    expect(base64Of(bytes)).toBe(Buffer.from(bytes).toString('base64'))
  })
})
