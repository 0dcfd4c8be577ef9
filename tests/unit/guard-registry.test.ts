import { describe, expect, it } from 'vitest'
import { PauseRegistry } from '@/lib/guard/registry'
import { parseControlEvent, parsePauseList, type GuardPause } from '@/lib/guard/protocol'

const pause = (id: string, version: number, overrides: Partial<GuardPause> = {}): GuardPause => ({
  id, vhost: '/', queue: 'orders.work', entityKey: `order-${id}`, entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' }, status: 'active', version, ...overrides,
})
const msg = (orderId: string, headers: Record<string, unknown> = {}) => ({ content: Buffer.from(JSON.stringify({ orderId })), properties: { headers } })
const withProperties = (properties: Record<string, unknown>) => ({ content: Buffer.from('{}'), properties })

describe('pause registry versions', () => {
  const cases: { name: string; steps: (r: PauseRegistry) => unknown[]; expected: unknown[]; ids: string[]; version: number }[] = [
    {
      name: 'a list, then the next event applies',
      steps: (r) => [r.replace({ version: 3, pauses: [pause('1', 3)] }), r.apply({ type: 'pause', version: 4, pause: pause('2', 4) })],
      expected: [true, 'applied'], ids: ['1', '2'], version: 4,
    },
    {
      name: 'an event at or below the known version is stale and ignored',
      steps: (r) => [r.replace({ version: 5, pauses: [pause('1', 3)] }), r.apply({ type: 'resume', version: 3, pause: pause('1', 3, { status: 'resumed' }) }), r.apply({ type: 'pause', version: 5, pause: pause('9', 5) })],
      expected: [true, 'stale', 'stale'], ids: ['1'], version: 5,
    },
    {
      name: 'an event that skips a version is applied and reported as a gap',
      steps: (r) => [r.replace({ version: 2, pauses: [] }), r.apply({ type: 'pause', version: 7, pause: pause('7', 7) })],
      expected: [true, 'gap'], ids: ['7'], version: 7,
    },
    {
      name: 'a resume removes the pause',
      steps: (r) => [r.replace({ version: 2, pauses: [pause('1', 1), pause('2', 2)] }), r.apply({ type: 'resume', version: 3, pause: pause('1', 3, { status: 'resumed' }) })],
      expected: [true, 'applied'], ids: ['2'], version: 3,
    },
    {
      name: 'an older list arriving late does not undo newer events',
      steps: (r) => [r.replace({ version: 4, pauses: [pause('1', 4)] }), r.apply({ type: 'resume', version: 5, pause: pause('1', 5, { status: 'resumed' }) }), r.replace({ version: 4, pauses: [pause('1', 4)] })],
      expected: [true, 'applied', false], ids: [], version: 5,
    },
    {
      name: 'before any list every event is a gap',
      steps: (r) => [r.apply({ type: 'pause', version: 1, pause: pause('1', 1) })],
      expected: ['gap'], ids: ['1'], version: 1,
    },
    {
      name: 'pauses of other queues and vhosts are not kept',
      steps: (r) => [r.replace({ version: 3, pauses: [pause('1', 1, { queue: 'billing.work' }), pause('2', 2, { vhost: 'other' }), pause('3', 3)] })],
      expected: [true], ids: ['3'], version: 3,
    },
    {
      name: 'a releasing pause still holds; a resumed one in a list does not',
      steps: (r) => [r.replace({ version: 3, pauses: [pause('1', 1, { status: 'releasing' }), pause('2', 2, { status: 'resumed' })] })],
      expected: [true], ids: ['1'], version: 3,
    },
  ]
  for (const c of cases) {
    it(c.name, () => {
      const registry = new PauseRegistry('/', 'orders.work')
      expect(c.steps(registry)).toEqual(c.expected)
      expect(registry.list().map((p) => p.id)).toEqual(c.ids)
      expect(registry.version).toBe(c.version)
    })
  }
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
  it('accepts the API and event shapes', () => {
    const dto = { ...pause('1', 4), sourceId: '3', reason: 'r', createdBy: 'ann', createdAt: '2026-01-01T00:00:00Z', replayJobId: null, held: 0, resumedAt: null, resumedBy: null }
    expect(parsePauseList({ version: 4, pauses: [dto] })?.pauses[0]).toEqual(pause('1', 4))
    expect(parseControlEvent({ type: 'resume', version: 5, pause: { ...dto, status: 'resumed', version: 5 } })).toMatchObject({ type: 'resume', version: 5 })
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

  it('rejects malformed events and drops unusable rules', () => {
    expect(parseControlEvent({ type: 'explode', version: 1, pause: pause('1', 1) })).toBeNull()
    expect(parseControlEvent({ type: 'pause', version: 1 })).toBeNull()
    expect(parseControlEvent({ type: 'pause', version: 1, pause: { ...pause('1', 1), entityKeyRule: { kind: 'property', name: 'headers' } } })?.pause.entityKeyRule).toBeNull()
  })
})
