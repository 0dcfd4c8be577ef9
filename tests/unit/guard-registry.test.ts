import { describe, expect, it } from 'vitest'
import { PauseRegistry } from '@/packages/guard/src/registry'
import { parsePauseList, type GuardPause } from '@/packages/guard/src/protocol'
import { GUARD_VERSION } from '@/packages/guard/src'

const pause = (id: string, version: number, overrides: Partial<GuardPause> = {}): GuardPause => ({
  id, vhost: '/', queue: 'orders.work', entityKey: `order-${id}`, entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' }, status: 'active', version, ...overrides,
})
const msg = (orderId: string, headers: Record<string, unknown> = {}) => ({ content: Buffer.from(JSON.stringify({ orderId })), properties: { headers } })
const withProperties = (properties: Record<string, unknown>) => ({ content: Buffer.from('{}'), properties })

describe('pause registry state', () => {
  it('a list replaces everything known before, newer or older version alike (the list read last is the truth)', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({ version: 7, pauses: [pause('1', 6), pause('2', 7)] })
    expect(registry.list().map((p) => p.id)).toEqual(['1', '2'])
    // A lower version (a restored database, say) is still what Lazarus says now: nothing pins the guard to a number.
    registry.replace({ version: 3, pauses: [pause('3', 3)] })
    expect(registry.list().map((p) => p.id)).toEqual(['3'])
    expect(registry.version).toBe(3)
  })

  it('forget() drops every pause and marks the registry as not loaded', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    expect(registry.isLoaded).toBe(false)
    registry.replace({ version: 2, pauses: [pause('1', 1), pause('2', 2, { entityKey: null, entityKeyRule: null })] })
    expect(registry.isLoaded).toBe(true)
    registry.forget()
    expect(registry.isLoaded).toBe(false)
    expect(registry.list()).toEqual([])
    expect(registry.wholeQueuePause()).toBeNull()
    expect(registry.match(msg('order-1'))).toBeNull()
  })

  it('keeps only pauses of its own queue and vhost', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({ version: 3, pauses: [pause('1', 1, { queue: 'billing.work' }), pause('2', 2, { vhost: 'other' }), pause('3', 3)] })
    expect(registry.list().map((p) => p.id)).toEqual(['3'])
  })

  it('a releasing pause still holds; a resumed one in a list does not', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({ version: 3, pauses: [pause('1', 1, { status: 'releasing' }), pause('2', 2, { status: 'resumed' })] })
    expect(registry.list().map((p) => p.id)).toEqual(['1'])
  })
})

describe('pause registry matching', () => {
  it('matches a paused entity by its rule and nothing else', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({ version: 1, pauses: [pause('1', 1, { entityKey: 'order-7' })] })
    expect(registry.match(msg('order-7'))).toMatchObject({ pause: { id: '1' }, entityKey: 'order-7' })
    expect(registry.match(msg('order-8'))).toBeNull()
    expect(registry.match({ content: Buffer.from('not json'), properties: {} })).toBeNull()
  })

  it('applies each pause its own rule; a pause without a rule reads x-entity-key', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({
      version: 2,
      pauses: [pause('1', 1, { entityKey: 'c-1', entityKeyRule: { kind: 'property', name: 'correlationId' } }), pause('2', 2, { entityKey: 'E-2', entityKeyRule: null })],
    })
    expect(registry.match(withProperties({ correlationId: 'c-1' }))?.pause.id).toBe('1')
    expect(registry.match(withProperties({ headers: { 'x-entity-key': 'E-2' } }))?.pause.id).toBe('2')
    expect(registry.match(withProperties({ correlationId: 'E-2' }))).toBeNull()
  })

  it('a whole-queue pause matches every message', () => {
    const registry = new PauseRegistry('/', 'orders.work')
    registry.replace({ version: 2, pauses: [pause('1', 1), pause('2', 2, { entityKey: null, entityKeyRule: null })] })
    expect(registry.wholeQueuePause()?.id).toBe('2')
    expect(registry.match(msg('anything'))).toMatchObject({ pause: { id: '2' }, entityKey: null })
  })
})

describe('protocol parsing (untrusted input)', () => {
  it('accepts the API shape', () => {
    const dto = { ...pause('1', 4), sourceId: '3', reason: 'r', createdBy: 'ann', createdAt: '2026-01-01T00:00:00Z', replayJobId: null, held: 0, resumedAt: null, resumedBy: null }
    expect(parsePauseList({ version: 4, pauses: [dto] })?.pauses[0]).toEqual(pause('1', 4))
  })

  it('exports the guard version as semver, 2.x since events stopped carrying state', () => {
    expect(GUARD_VERSION).toMatch(/^2\.\d+\.\d+$/)
  })

  const bad: [string, unknown][] = [
    ['not an object', 'pauses'],
    ['version missing', { pauses: [] }],
    ['negative version', { version: -1, pauses: [] }],
    ['fractional version', { version: 1.5, pauses: [] }],
    ['pause without queue', { version: 1, pauses: [{ ...pause('1', 1), queue: 7 }] }],
    ['pause with unknown status', { version: 1, pauses: [{ ...pause('1', 1), status: 'sleeping' }] }],
  ]
  for (const [name, body] of bad) it(`rejects a list: ${name}`, () => expect(parsePauseList(body)).toBeNull())

  it('drops unusable rules', () => {
    const list = parsePauseList({ version: 1, pauses: [{ ...pause('1', 1), entityKeyRule: { kind: 'property', name: 'headers' } }] })
    expect(list?.pauses[0].entityKeyRule).toBeNull()
  })
})
