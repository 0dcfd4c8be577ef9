import { describe, expect, it } from 'vitest'
import { extractEntityVersion, formatVersion, versionOf, VersionWindow } from '@/packages/guard/src/entity-version'
import type { EntityVersionRule } from '@/packages/guard/src/protocol'
import { normaliseDelivery } from '@/lib/server/ingest/normalise/normalise-delivery'
import type { DeliveryView } from '@/lib/server/ingest/types'
import { entityVersionRuleSchema } from '@/lib/shared/schemas/source'

describe('versionOf: what reads as a version', () => {
  const cases: Array<[unknown, EntityVersionRule['type'], number | 'unparsable' | null]> = [
    [7, 'number', 7],
    [7.5, 'number', 7.5],
    [' 12 ', 'number', 12],
    ['-3e2', 'number', -300],
    [12n, 'number', 12],
    [Buffer.from('42'), 'number', 42],
    [{ '!': 'long', value: 9 }, 'number', 9],
    [undefined, 'number', null],
    [null, 'time', null],
    ['v12', 'number', 'unparsable'],
    ['', 'number', 'unparsable'],
    [Number.NaN, 'number', 'unparsable'],
    [true, 'number', 'unparsable'],
    [{ a: 1 }, 'number', 'unparsable'],
    ['2026-01-02T03:04:05Z', 'time', Date.UTC(2026, 0, 2, 3, 4, 5)],
    ['2026-01-02T03:04:05.123456+01:00', 'time', Date.UTC(2026, 0, 2, 2, 4, 5, 123)],
    ['2026-01-02 03:04:05+0100', 'time', Date.UTC(2026, 0, 2, 2, 4, 5)],
    ['2026-01-02', 'time', Date.UTC(2026, 0, 2)],
    [new Date(5), 'time', 5],
    // A time without a zone would be read in each machine's own zone: not a version.
    ['2026-01-02T03:04:05', 'time', 'unparsable'],
    ['yesterday', 'time', 'unparsable'],
    [1_700_000_000, 'time', 'unparsable'],
  ]
  for (const [raw, type, expected] of cases) {
    it(`${String(raw instanceof Buffer ? `Buffer(${raw.toString()})` : typeof raw === 'object' && raw !== null && !(raw instanceof Date) ? JSON.stringify(raw) : raw)} as ${type}`, () => {
      expect(versionOf(raw, type)).toBe(expected)
    })
  }

  it('formats times as ISO and numbers as they are', () => {
    expect(formatVersion(Date.UTC(2026, 0, 2), 'time')).toBe('2026-01-02T00:00:00.000Z')
    expect(formatVersion(5, 'number')).toBe('5')
  })
})

describe('the guard and the drainer read the same version from the same message', () => {
  const body = Buffer.from(JSON.stringify({ order: { id: 'O-1', rev: '17' }, at: '2026-03-04T05:06:07Z' }))
  const rules: Array<[EntityVersionRule, number | 'unparsable' | null]> = [
    [{ kind: 'jsonPointer', pointer: '/order/rev', type: 'number' }, 17],
    [{ kind: 'jsonPointer', pointer: '/at', type: 'time' }, Date.UTC(2026, 2, 4, 5, 6, 7)],
    [{ kind: 'header', name: 'x-version', type: 'number' }, 3],
    [{ kind: 'property', name: 'messageId', type: 'number' }, 'unparsable'],
    [{ kind: 'jsonPointer', pointer: '/missing', type: 'number' }, null],
  ]
  for (const [rule, expected] of rules) {
    it(`${JSON.stringify(rule)}`, () => {
      const guardSide = extractEntityVersion(rule, { content: body, properties: { headers: { 'x-version': 3 }, messageId: 'm-1' } as never })
      expect(guardSide).toBe(expected)
      const view: DeliveryView = {
        queue: 'orders.dlq', exchange: '', routingKey: 'orders.dlq', redelivered: false, body,
        properties: { contentType: 'application/json', messageId: 'm-1' }, headers: { 'x-version': 3, 'x-entity-key': 'O-1' },
        entityVersionRule: rule,
      }
      const derived = normaliseDelivery(view)
      expect(derived.entityVersion ?? null).toBe(expected === 'unparsable' ? null : expected)
      expect(derived.flags.includes('entity-version-unparsable')).toBe(expected === 'unparsable')
    })
  }

  it('reads no version of a message without an entity key', () => {
    const derived = normaliseDelivery({
      queue: 'q', exchange: '', routingKey: 'q', redelivered: false, body, properties: {}, headers: { 'x-version': 3 },
      entityVersionRule: { kind: 'header', name: 'x-version', type: 'number' },
    })
    expect(derived.entityVersion ?? null).toBeNull()
  })

  it('the API schema takes exactly the rules the guard knows', () => {
    expect(entityVersionRuleSchema.safeParse({ kind: 'header', name: 'v', type: 'number' }).success).toBe(true)
    expect(entityVersionRuleSchema.safeParse({ kind: 'header', name: 'v' }).success).toBe(false)
    expect(entityVersionRuleSchema.safeParse({ kind: 'header', name: 'v', type: 'semver' }).success).toBe(false)
    expect(entityVersionRuleSchema.safeParse({ kind: 'header', name: 'v', type: 'time', extra: 1 }).success).toBe(false)
  })
})

describe('VersionWindow: bounded by entities and minutes', () => {
  it('keeps the highest version per entity', () => {
    const w = new VersionWindow()
    w.remember('A', 5)
    w.remember('A', 3)
    expect(w.highest('A')).toBe(5)
    w.remember('A', 9)
    expect(w.highest('A')).toBe(9)
    expect(w.highest('B')).toBeNull()
  })

  it('forgets the entity updated longest ago beyond maxEntities', () => {
    const w = new VersionWindow({ maxEntities: 2 })
    w.remember('A', 1)
    w.remember('B', 1)
    w.remember('A', 2) // A is now the most recently updated
    w.remember('C', 1)
    expect(w.size).toBe(2)
    expect(w.highest('B')).toBeNull()
    expect(w.highest('A')).toBe(2)
    expect(w.highest('C')).toBe(1)
  })

  it('forgets a version windowMs after it was last raised', () => {
    let now = 1_000_000
    const w = new VersionWindow({ windowMs: 60_000, now: () => now })
    w.remember('A', 5)
    now += 30_000
    w.remember('B', 1)
    now += 29_999
    expect(w.highest('A')).toBe(5)
    now += 1
    expect(w.highest('A')).toBeNull()
    expect(w.highest('B')).toBe(1)
    // An expired entry does not lift a new, lower version.
    w.remember('A', 2)
    expect(w.highest('A')).toBe(2)
    now += 60_000
    expect(w.size).toBe(0)
  })
})
