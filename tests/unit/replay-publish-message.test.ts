import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import '@/lib/server/platform/broker/amqplib'
import { encodeTypedTable, getTypedHeaders, publishHeadersSlot, type AmqplibCodec, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { BROKER_HEADERS, buildPublish, LAZARUS_HEADERS, MAX_HEADER_TABLE_BYTES, replayHeaderBytes, replayHeaders, replayProperties, reservedHeaderOwner, type StoredMessage } from '@/lib/server/replay/publish-message'

/** amqplib's codec module as the app patched it (importing the app's amqplib wrapper installs the patch). */
function installedCodec(): AmqplibCodec {
  const require = createRequire(import.meta.url)
  return require(path.join(path.dirname(require.resolve('amqplib')), 'lib', 'codec.js')) as AmqplibCodec
}

const headers: TypedTable = {
  'app-header': { t: 'S', v: 'keep me' },
  'retry-count': { t: 'l', v: '3' },
  CC: { t: 'A', v: [{ t: 'S', v: 'other.queue' }] },
  BCC: { t: 'A', v: [{ t: 'S', v: 'secret.queue' }] },
  'x-death': { t: 'A', v: [{ t: 'F', v: { count: { t: 'l', v: '1' } } }] },
  'x-first-death-queue': { t: 'S', v: 'work' },
  'x-first-death-reason': { t: 'S', v: 'rejected' },
  'x-first-death-exchange': { t: 'S', v: 'app' },
  'x-last-death-queue': { t: 'S', v: 'work' },
  'x-last-death-reason': { t: 'S', v: 'rejected' },
  'x-last-death-exchange': { t: 'S', v: 'app' },
  'x-delivery-count': { t: 'l', v: '20' },
  'x-acquired-count': { t: 'l', v: '21' },
  'x-lazarus-origin-id': { t: 'S', v: '7' },
  'x-lazarus-replay-id': { t: 'S', v: 'old-replay' },
  'x-lazarus-replay-count': { t: 'l', v: '2' },
  'x-lazarus-replayed-by': { t: 'S', v: 'someone' },
  'x-lazarus-held-from': { t: 'S', v: 'work' },
  'x-lazarus-held-id': { t: 'S', v: 'h-1' },
  'z-last': { t: 'b', v: 1 },
}

const message: StoredMessage = {
  id: '42',
  body: Buffer.from('body'),
  properties: { contentType: 'application/json', deliveryMode: 2, expiration: '1000', userId: 'guest', messageId: 'm-1', timestamp: 1764500000, priority: 0, clusterId: 'c' },
  headers,
  lineageOriginId: '7',
  replayCount: 2,
}

describe('the message a replay publishes', () => {
  it('strips broker-owned and stale Lazarus headers, keeps the rest in order, and stamps the lineage', () => {
    const out = replayHeaders(message, { kind: 'replay', replayId: 'r-1', actor: 'alice' })
    expect(Object.keys(out)).toEqual(['app-header', 'retry-count', 'z-last', 'x-lazarus-origin-id', 'x-lazarus-replay-id', 'x-lazarus-replay-count', 'x-lazarus-replayed-by'])
    expect(out['retry-count']).toEqual({ t: 'l', v: '3' })
    expect(out['x-lazarus-origin-id']).toEqual({ t: 'S', v: '7' })
    expect(out['x-lazarus-replay-id']).toEqual({ t: 'S', v: 'r-1' })
    expect(out['x-lazarus-replay-count']).toEqual({ t: 'l', v: '3' })
    expect(out['x-lazarus-replayed-by']).toEqual({ t: 'S', v: 'alice' })
  })

  it('uses the message itself as the origin of its first replay', () => {
    const out = replayHeaders({ ...message, lineageOriginId: null, replayCount: 0 }, { kind: 'replay', replayId: 'r', actor: 'a' })
    expect(out['x-lazarus-origin-id']).toEqual({ t: 'S', v: '42' })
    expect(out['x-lazarus-replay-count']).toEqual({ t: 'l', v: '1' })
  })

  it('marks a replay of a paused entity with its pause so the guard lets it through', () => {
    expect(replayHeaders(message, { kind: 'replay', replayId: 'r', actor: 'a', pauseId: '9' })['x-lazarus-release']).toEqual({ t: 'S', v: '9' })
  })

  it('sends a held message back as it was, with its release mark, minus the guard headers and CC/BCC', () => {
    const out = replayHeaders(message, { kind: 'release', replayId: 'r-2', pauseId: '5' })
    expect(Object.keys(out)).toEqual([
      'app-header', 'retry-count', 'x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange',
      'x-last-death-queue', 'x-last-death-reason', 'x-last-death-exchange', 'x-delivery-count', 'x-acquired-count', 'z-last',
      'x-lazarus-release', 'x-lazarus-replay-id',
    ])
    expect(out['x-lazarus-release']).toEqual({ t: 'S', v: '5' })
  })

  it('keeps the properties except expiration, a foreign user id and the cluster id', () => {
    expect(replayProperties(message.properties, 'guest')).toEqual({ contentType: 'application/json', deliveryMode: 2, userId: 'guest', messageId: 'm-1', timestamp: 1764500000, priority: 0 })
    expect(replayProperties(message.properties, 'lazarus')).not.toHaveProperty('userId')
  })

  it('publishes mandatory, with its typed headers loaded into the reused headers object', () => {
    const built = buildPublish(message, { kind: 'replay', replayId: 'r', actor: 'a' }, { amqpUser: 'guest', maxBodyBytes: 100 })
    expect(built.ok).toBe(true)
    if (!built.ok) return
    expect(built.options.mandatory).toBe(true)
    expect(built.content.equals(message.body)).toBe(true)
    const slot = publishHeadersSlot()
    const headers = slot.load(built.headers)
    expect(Object.isSealed(headers)).toBe(true)
    expect(Object.keys(headers)).toEqual([])
    const typed = getTypedHeaders(headers)!
    expect(typed['retry-count']).toEqual(message.headers['retry-count'])
    expect(typed['x-lazarus-replay-id']).toEqual({ t: 'S', v: 'r' })
    // What the patched encoder writes, under amqplib's Object.create() layer, is exactly the typed table's encoding.
    const wire = Buffer.alloc(65536)
    const encode = (h: object) => wire.subarray(4, installedCodec().encodeTable(wire, Object.create(h), 0))
    expect(encode(headers).equals(encodeTypedTable(typed))).toBe(true)
    // Loaded again, the same object carries the next message's table.
    const next = buildPublish(message, { kind: 'replay', replayId: 'r2', actor: 'a' }, { amqpUser: 'guest', maxBodyBytes: 100 })
    if (!next.ok) throw new Error('expected a publish')
    expect(slot.load(next.headers)).toBe(headers)
    expect(getTypedHeaders(headers)!['x-lazarus-replay-id']).toEqual({ t: 'S', v: 'r2' })
    expect(encode(headers).equals(next.headers.encoded)).toBe(true)
    expect(encode(headers).equals(built.headers.encoded)).toBe(false)
  })

  it('refuses a body over the limit without publishing', () => {
    expect(buildPublish(message, { kind: 'replay', replayId: 'r', actor: 'a' }, { amqpUser: 'guest', maxBodyBytes: 3 })).toMatchObject({ ok: false, reason: 'too-large' })
  })

  it('refuses headers that cannot be encoded', () => {
    const broken = { ...message, headers: { bad: { t: 'I', v: 2 ** 40 } } as unknown as TypedTable }
    expect(buildPublish(broken, { kind: 'replay', replayId: 'r', actor: 'a' }, { amqpUser: 'guest', maxBodyBytes: 100 })).toMatchObject({ ok: false, reason: 'invalid-headers' })
  })

  it('measures the header table a replay would send', () => {
    const big = { ...message, headers: { stack: { t: 'S', v: 'x'.repeat(MAX_HEADER_TABLE_BYTES) } } as TypedTable }
    expect(replayHeaderBytes(big, 'a')).toBeGreaterThan(MAX_HEADER_TABLE_BYTES)
    const bytes = replayHeaderBytes(message, 'alice')
    expect(bytes).toBe(encodeTypedTable(replayHeaders(message, { kind: 'replay', replayId: '00000000-0000-0000-0000-000000000000', actor: 'alice' })).length)
  })

  it('names the owner of every header a replay strips or stamps, in any case, and of no application header', () => {
    for (const name of BROKER_HEADERS) {
      expect([name, reservedHeaderOwner(name), reservedHeaderOwner(name.toUpperCase()), reservedHeaderOwner(name.toLowerCase())]).toEqual([name, 'the broker', 'the broker', 'the broker'])
    }
    for (const name of [...LAZARUS_HEADERS, 'x-lazarus-held-from', 'X-Lazarus-Anything']) expect([name, reservedHeaderOwner(name)]).toEqual([name, 'Lazarus'])
    // Every header the stripping test above sees removed is one a revision may not set.
    const stripped = Object.keys(headers).filter((name) => !Object.hasOwn(replayHeaders({ id: '1', headers, lineageOriginId: null, replayCount: 0 }, { kind: 'replay', replayId: 'r', actor: 'a' }), name))
    expect(stripped.length).toBeGreaterThan(0)
    for (const name of stripped) expect([name, reservedHeaderOwner(name)]).not.toEqual([name, null])
    for (const name of ['app-header', 'retry-count', 'x-deaths', 'x-first-death', 'ccc', 'x-lazarus', 'lazarus-origin-id']) expect([name, reservedHeaderOwner(name)]).toEqual([name, null])
  })
})
