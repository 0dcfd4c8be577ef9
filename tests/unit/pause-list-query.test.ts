import { describe, expect, it } from 'vitest'
import { withRegistryVersion } from '@/packages/guard/src/poll-request'
import { listPausesQuerySchema } from '@/lib/shared/schemas/pause'

/** GET /api/pauses' query: what a 2.x guard's poll sends, and what is refused before it reaches the database. */
describe('pause list query', () => {
  it("accepts a guard's poll", () => {
    const poll = { queue: 'orders.work', vhost: '/', instance: 'web-7.example-4242-0a1b2c3d', guardVersion: '2.0.0' }
    expect(listPausesQuerySchema.parse(poll)).toEqual({ status: 'active', ...poll })
  })

  it("reads the registry version a 2.1 guard holds, which the guard adds once it read a list", () => {
    const poll = { queue: 'orders.work', vhost: '/', instance: 'h-1-aa', guardVersion: '2.1.0' }
    expect(listPausesQuerySchema.parse({ ...poll, registryVersion: '42' })).toEqual({ status: 'active', ...poll, registryVersion: 42 })
    expect(withRegistryVersion('http://l/api/pauses?queue=q', -1)).toBe('http://l/api/pauses?queue=q')
    expect(withRegistryVersion('http://l/api/pauses?queue=q', 0)).toBe('http://l/api/pauses?queue=q&registryVersion=0')
  })

  it('still accepts the plain list (the UI, 1.x guards)', () => {
    expect(listPausesQuerySchema.parse({})).toEqual({ status: 'active' })
    expect(listPausesQuerySchema.parse({ status: 'all' })).toEqual({ status: 'all' })
  })

  const refused: [string, Record<string, string>][] = [
    ['a heartbeat without its queue', { instance: 'h-1-aa', guardVersion: '2.0.0' }],
    ['an unknown parameter', { queue: 'q', bogus: '1' }],
    ['a NUL in the queue', { queue: 'orders\u0000work' }],
    ['a newline in the vhost', { queue: 'q', vhost: '/\nforged' }],
    ['a queue over 255 bytes', { queue: 'é'.repeat(128) }],
    ['an empty queue', { queue: '' }],
    ['spaces in the instance id', { queue: 'q', instance: 'my host' }],
    ['an instance id over 200 characters', { queue: 'q', instance: 'h'.repeat(201) }],
    ['a version that is not semver', { queue: 'q', instance: 'h', guardVersion: 'latest' }],
    ['a registry version that is not a number', { queue: 'q', instance: 'h', registryVersion: '-1' }],
    ['a registry version past 15 digits', { queue: 'q', instance: 'h', registryVersion: '1'.repeat(16) }],
  ]
  for (const [name, query] of refused) it(`refuses ${name}`, () => expect(listPausesQuerySchema.safeParse(query).success).toBe(false))
})
