import { describe, expect, it } from 'vitest'
import { BoundedCache } from '@/lib/server/ingest/normalise/bounded-cache'

describe('normaliser cache', () => {
  it('computes once per input, null results included', () => {
    const cache = new BoundedCache<string | null>({ entries: 10, maxKeyLength: 100 })
    let calls = 0
    const compute = (v: string | null) => () => (calls++, v)
    expect(cache.get('a', compute('A'))).toBe('A')
    expect(cache.get('a', compute('other'))).toBe('A')
    expect(cache.get('blank', compute(null))).toBeNull()
    expect(cache.get('blank', compute('other'))).toBeNull()
    expect(calls).toBe(2)
  })

  it('forgets the oldest entry past its bound', () => {
    const cache = new BoundedCache<number>({ entries: 2, maxKeyLength: 100 })
    cache.get('1', () => 1)
    cache.get('2', () => 2)
    cache.get('3', () => 3)
    expect(cache.get('1', () => -1)).toBe(-1)
    expect(cache.get('3', () => -3)).toBe(3)
  })

  it('never keeps inputs longer than its key limit', () => {
    const cache = new BoundedCache<number>({ entries: 10, maxKeyLength: 4 })
    let calls = 0
    for (let i = 0; i < 3; i++) cache.get('too long', () => ++calls)
    expect(calls).toBe(3)
  })
})
