import { describe, expect, it } from 'vitest'
import { routeKey, type ExchangeNode } from '@/lib/server/replay/route-match'
import { topicMatches, type MatchMeter } from '@/lib/shared/topology/topic-match'

describe('topic matching', () => {
  const cases: [string, string, boolean][] = [
    ['order.created', 'order.created', true],
    ['order.*', 'order.created', true],
    ['order.*', 'order.created.eu', false],
    ['order.#', 'order', true],
    ['order.#', 'order.created.eu', true],
    ['#', '', true],
    ['#', 'a.b.c', true],
    ['*', '', true],
    ['*', 'a.b', false],
    ['#.eu', 'order.created.eu', true],
    ['#.eu', 'eu', true],
    ['*.created.#', 'order.created', true],
    ['*.created.#', 'created', false],
    ['a.#.z', 'a.z', true],
    ['a.#.z', 'a.b.c.z', true],
    ['a.#.z', 'a.b.c', false],
    ['order.created', 'order.Created', false],
  ]
  for (const [pattern, key, expected] of cases) {
    it(`"${pattern}" ${expected ? 'matches' : 'does not match'} "${key}"`, () => expect(topicMatches(pattern, key)).toBe(expected))
  }

  it('does bounded work on hostile patterns: at most one step per (pattern word, key word) pair', () => {
    // A backtracking matcher takes exponentially many steps on this; the memoised one at most (17 + 1) × (40 + 1).
    const hostile = '#.#.#.#.#.#.#.#.#.#.#.#.#.#.#.#.x'
    for (const words of [10, 20, 40]) {
      const meter: MatchMeter = { steps: 0 }
      expect(topicMatches(hostile, Array(words).fill('a').join('.'), meter)).toBe(false)
      // Counted for real: every word of the key is looked at.
      expect(meter.steps).toBeGreaterThanOrEqual(words)
      expect(meter.steps).toBeLessThanOrEqual((17 + 1) * (words + 1))
    }
  })
})

describe('routing a key through exchanges', () => {
  const exchanges = new Map<string, ExchangeNode>([
    ['orders', { name: 'orders', type: 'topic', alternateExchange: null, bindings: [
      { destination: 'orders.work', destinationType: 'queue', routingKey: 'order.*' },
      { destination: 'audit.all', destinationType: 'queue', routingKey: '#' },
      { destination: 'eu', destinationType: 'exchange', routingKey: '*.*.eu' },
    ] }],
    ['eu', { name: 'eu', type: 'fanout', alternateExchange: null, bindings: [{ destination: 'eu.archive', destinationType: 'queue', routingKey: 'ignored' }] }],
    ['direct', { name: 'direct', type: 'direct', alternateExchange: 'catch-all', bindings: [{ destination: 'd.q', destinationType: 'queue', routingKey: 'k' }] }],
    ['catch-all', { name: 'catch-all', type: 'fanout', alternateExchange: null, bindings: [{ destination: 'unrouted', destinationType: 'queue', routingKey: '' }] }],
    ['by-headers', { name: 'by-headers', type: 'headers', alternateExchange: null, bindings: [{ destination: 'h.q', destinationType: 'queue', routingKey: '' }] }],
    ['loop-a', { name: 'loop-a', type: 'fanout', alternateExchange: null, bindings: [{ destination: 'loop-b', destinationType: 'exchange', routingKey: '' }, { destination: 'a.q', destinationType: 'queue', routingKey: '' }] }],
    ['loop-b', { name: 'loop-b', type: 'fanout', alternateExchange: null, bindings: [{ destination: 'loop-a', destinationType: 'exchange', routingKey: '' }] }],
  ])
  const queues = new Map([['orders.work', true]])
  const exists = (q: string) => queues.get(q) ?? false

  it('collects every queue a topic key reaches, through exchange-to-exchange bindings', () => {
    expect(routeKey(exchanges, 'orders', 'order.created', exists)).toEqual({ queues: ['audit.all', 'orders.work'], viaAlternate: false })
    expect(routeKey(exchanges, 'orders', 'order.created.eu', exists)).toEqual({ queues: ['audit.all', 'eu.archive'], viaAlternate: false })
  })
  it('uses the alternate exchange only when nothing matched', () => {
    expect(routeKey(exchanges, 'direct', 'k', exists)).toEqual({ queues: ['d.q'], viaAlternate: false })
    expect(routeKey(exchanges, 'direct', 'other', exists)).toEqual({ queues: ['unrouted'], viaAlternate: true })
  })
  it('routes the default exchange to the queue named by the key, if it exists', () => {
    expect(routeKey(exchanges, '', 'orders.work', exists)).toEqual({ queues: ['orders.work'], viaAlternate: false })
    expect(routeKey(exchanges, '', 'missing', exists)).toEqual({ queues: [], viaAlternate: false })
    expect(routeKey(exchanges, '', 'unknown', () => null).queues).toBeNull()
  })
  it('cannot tell for headers exchanges or exchanges it did not read', () => {
    expect(routeKey(exchanges, 'by-headers', 'k', exists).queues).toBeNull()
    expect(routeKey(exchanges, 'not-loaded', 'k', exists).queues).toBeNull()
  })
  it('survives exchange-to-exchange cycles', () => {
    expect(routeKey(exchanges, 'loop-a', 'k', exists)).toEqual({ queues: ['a.q'], viaAlternate: false })
  })
})
