import { describe, expect, it } from 'vitest'
import { parseXDeath } from '@/lib/server/ingest/normalise/x-death'

const NOW = new Date('2024-03-01T12:00:00Z')
const seconds = (iso: string) => Date.parse(iso) / 1000

const entry = (overrides: Record<string, unknown> = {}) => ({
  count: 1,
  reason: 'rejected',
  queue: 'orders.work',
  time: new Date('2024-03-01T10:00:00Z'),
  exchange: 'orders',
  'routing-keys': ['order.placed'],
  ...overrides,
})

describe('parseXDeath: well-formed headers', () => {
  it('derives reason, attempts, origin and times (docs/rabbitmq.md#x-death)', () => {
    const summary = parseXDeath(
      {
        'x-death': [
          entry({ queue: 'orders.retry', reason: 'expired', count: 2, time: new Date('2024-03-01T10:05:00Z'), exchange: 'orders.retry' }),
          entry({ count: 3 }),
        ],
        'x-first-death-queue': 'orders.work',
        'x-first-death-reason': 'rejected',
        'x-first-death-exchange': 'orders',
      },
      NOW,
    )
    expect(summary.deathReason).toBe('expired')
    expect(summary.decisiveReason).toBe('rejected')
    expect(summary.rejections).toBe(3)
    expect(summary.origin).toEqual({ exchange: 'orders', routingKeys: ['order.placed'], queue: 'orders.work' })
    expect(summary.firstDeathAt).toEqual(new Date('2024-03-01T10:00:00Z'))
    expect(summary.lastDeathAt).toEqual(new Date('2024-03-01T10:05:00Z'))
    expect(summary.flags).toEqual([])
  })

  const valueShapes: Array<[string, Record<string, unknown>]> = [
    ['Buffers for longstr', { queue: Buffer.from('orders.work'), reason: Buffer.from('rejected'), exchange: Buffer.from('orders') }],
    ['amqplib timestamp wrapper', { time: { '!': 'timestamp', value: seconds('2024-03-01T10:00:00Z') } }],
    ['seconds as a number', { time: seconds('2024-03-01T10:00:00Z') }],
    ['bigint count', { count: 1n }],
    ['long-tagged count', { count: { '!': 'long', value: 1 } }],
    ['routing keys as Buffers', { 'routing-keys': [Buffer.from('order.placed')] }],
  ]
  it.each(valueShapes)('accepts %s', (_name, overrides) => {
    const summary = parseXDeath({ 'x-death': [entry(overrides)], 'x-first-death-queue': 'orders.work' }, NOW)
    expect(summary.entries).toEqual([
      {
        queue: 'orders.work',
        reason: 'rejected',
        count: 1,
        exchange: 'orders',
        routingKeys: ['order.placed'],
        time: new Date('2024-03-01T10:00:00Z'),
        originalExpiration: null,
      },
    ])
    expect(summary.flags).toEqual([])
  })

  it('sums rejected and delivery_limit counts but not expired ones', () => {
    const summary = parseXDeath(
      {
        'x-death': [entry({ reason: 'delivery_limit', count: 1, queue: 'b' }), entry({ reason: 'expired', count: 9, queue: 'c' }), entry({ count: 4 })],
        'x-first-death-queue': 'orders.work',
      },
      NOW,
    )
    expect(summary.rejections).toBe(5)
    expect(summary.decisiveReason).toBe('delivery_limit')
  })

  it('falls back to the oldest entry when x-first-death-* is missing (and says so)', () => {
    const summary = parseXDeath({ 'x-death': [entry({ queue: 'b', exchange: 'bx' }), entry({ queue: 'a', exchange: 'ax' })] }, NOW)
    expect(summary.origin).toEqual({ exchange: 'ax', routingKeys: ['order.placed'], queue: 'a' })
    expect(summary.flags).toEqual(['x-death-suspicious'])
  })

  it('keeps "" as the default exchange', () => {
    const summary = parseXDeath({ 'x-death': [entry({ exchange: '' })], 'x-first-death-queue': 'orders.work', 'x-first-death-exchange': '' }, NOW)
    expect(summary.origin.exchange).toBe('')
  })

  it('uses x-last/x-first-death-reason when x-death is absent', () => {
    expect(parseXDeath({ 'x-first-death-reason': 'maxlen', 'x-first-death-queue': 'q' }, NOW).deathReason).toBe('maxlen')
    expect(parseXDeath({}, NOW)).toMatchObject({ entries: [], deathReason: null, rejections: null, flags: [] })
  })
})

describe('parseXDeath: malformed and forged headers never throw', () => {
  const cases: Array<[string, unknown, string[], Partial<{ entries: number; rejections: number | null }>]> = [
    ['not an array', 'rejected', ['x-death-malformed'], { entries: 0 }],
    ['a single table instead of an array', entry(), ['x-death-malformed'], { entries: 1, rejections: 1 }],
    ['non-table elements', [42, null, 'x', [entry()]], ['x-death-malformed'], { entries: 0 }],
    ['entry without queue or reason', [{ count: 1 }], ['x-death-malformed'], { entries: 1, rejections: null }],
    ['queue of the wrong type', [entry({ queue: { nested: true } })], ['x-death-malformed'], { entries: 1 }],
    ['negative count', [entry({ count: -5 })], ['x-death-suspicious'], { entries: 1, rejections: null }],
    ['zero count', [entry({ count: 0 })], ['x-death-suspicious'], { rejections: null }],
    ['absurd count', [entry({ count: 1e15 })], ['x-death-suspicious'], { rejections: null }],
    ['fractional count', [entry({ count: 2.5 })], ['x-death-malformed'], { rejections: null }],
    ['string count', [entry({ count: 'lots' })], ['x-death-malformed'], { rejections: null }],
    ['time in the future', [entry({ time: new Date('2031-01-01T00:00:00Z') })], ['x-death-suspicious'], { entries: 1 }],
    ['time before RabbitMQ existed', [entry({ time: new Date('1999-01-01T00:00:00Z') })], ['x-death-suspicious'], { entries: 1 }],
    ['invalid Date', [entry({ time: new Date(Number.NaN) })], ['x-death-suspicious'], { entries: 1 }],
    ['time as garbage text', [entry({ time: 'yesterday' })], ['x-death-malformed'], { entries: 1 }],
    ['routing-keys not an array', [entry({ 'routing-keys': 'order.placed' })], ['x-death-malformed'], { entries: 1 }],
    ['unknown reason', [entry({ reason: 'gremlins' })], ['x-death-suspicious'], { rejections: null }],
    ['queue name longer than a short string', [entry({ queue: 'q'.repeat(100_000) })], ['x-death-suspicious'], { entries: 1 }],
    ['thousands of entries', Array.from({ length: 5000 }, (_, i) => entry({ queue: `q${i}` })), ['x-death-suspicious'], { entries: 64 }],
    ['prototype-named keys', [{ __proto__: { queue: 'evil' }, constructor: 'x' }], ['x-death-malformed'], { entries: 1 }],
  ]
  it.each(cases)('%s', (_name, xDeath, flags, expected) => {
    const summary = parseXDeath({ 'x-death': xDeath, 'x-first-death-queue': 'orders.work' }, NOW)
    for (const flag of flags) expect(summary.flags).toContain(flag)
    if (expected.entries !== undefined) expect(summary.entries).toHaveLength(expected.entries)
    if (expected.rejections !== undefined) expect(summary.rejections).toBe(expected.rejections)
    for (const e of summary.entries) {
      expect(e.time === null || e.time.getTime() <= NOW.getTime() + 5 * 60_000).toBe(true)
      expect(e.count === null || (Number.isSafeInteger(e.count) && e.count > 0)).toBe(true)
    }
  })

  it('flags an x-first-death-queue that no entry mentions', () => {
    const summary = parseXDeath({ 'x-death': [entry()], 'x-first-death-queue': 'elsewhere' }, NOW)
    expect(summary.flags).toContain('x-death-suspicious')
    expect(summary.origin.queue).toBe('elsewhere')
  })

  it('survives headers that are not an object', () => {
    for (const headers of [null, undefined, 42, 'x', [], Buffer.from('x')]) {
      expect(parseXDeath(headers, NOW).entries).toEqual([])
    }
  })
})
