import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import { createHash } from 'node:crypto'
import { createTestDb, type TestDb } from '../helpers/test-db'
import * as health from '@/app/api/health/route'
import * as sources from '@/app/api/sources/route'
import * as source from '@/app/api/sources/[id]/route'
import * as messages from '@/app/api/messages/route'
import * as message from '@/app/api/messages/[id]/route'
import * as messageBody from '@/app/api/messages/[id]/body/route'
import * as groups from '@/app/api/groups/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'

const base = 'http://lazarus.test'
const get = (path: string) => new Request(base + path, { headers: ADMIN_AUTH })
const send = (method: string, path: string, body: unknown) =>
  new Request(base + path, { method, body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...ADMIN_AUTH } })
const ctx = <P>(params: P) => ({ params: Promise.resolve(params) })

function row(overrides: Partial<IngestRow> = {}): IngestRow {
  const body = overrides.body ?? Buffer.from(JSON.stringify({ orderId: 'order-1' }))
  return {
    fingerprint: createHash('sha256').update(body).update(String(Math.random())).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8'),
    propertiesJson: JSON.stringify({ contentType: 'application/json', messageId: 'm-1' }),
    headersJson: JSON.stringify({ 'x-retries': { t: 'l', v: '9007199254740993' }, 'x-note': { t: 'S', v: 'hello' } }),
    deliveryExchange: '', deliveryRoutingKey: 'orders.dlq', deathReason: 'rejected', attempts: 3,
    originExchange: 'orders', originRoutingKeys: ['order.created'], originQueue: 'orders.work',
    firstDeathAt: new Date('2026-11-01T10:00:00Z'), lastDeathAt: new Date('2026-11-01T10:05:00Z'), failedAt: new Date('2026-11-01T10:05:00Z'),
    errorType: 'com.acme.StockException', errorMessage: 'SKU 1 out of stock', errorStack: null, failureKind: 'exhausted',
    service: 'orders', serviceVersion: '1.5.0', framework: 'lazarus', entityKey: 'order-1',
    signature: 'v1:test000000000001', title: 'StockException: SKU <int> out of stock', messagePattern: 'SKU <int> out of stock',
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    ...overrides,
  }
}

describe('HTTP API', () => {
  let db: TestDb
  let sourceId: string
  let messageId: string

  beforeAll(async () => {
    db = await createTestDb()
    const created = await sources.POST(send('POST', '/api/sources', { queue: 'orders.dlq', confirmNotWorkQueue: true }), ctx({}))
    expect(created.status).toBe(201)
    sourceId = (await created.json()).id
    const rows = [row(), row({ failedAt: new Date('2026-11-01T09:00:00Z'), entityKey: 'order-2' }), row({ body: Buffer.from([0xff, 0x00, 0xfe]), bodyEncoding: 'binary', bodyPreview: null, propertiesJson: '{}' })]
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows })
    const list = await (await messages.GET(get('/api/messages'), ctx({}))).json()
    messageId = list.messages[0].id
  })
  afterAll(async () => db?.drop())

  const cases: { name: string; call: () => Promise<Response>; status: number; check?: (body: any) => void }[] = [
    { name: 'health reports the database', call: () => health.GET(get('/api/health'), ctx({})), status: 200, check: (b) => expect(b.db.ok).toBe(true) },
    { name: 'sources list', call: () => sources.GET(get('/api/sources'), ctx({})), status: 200, check: (b) => expect(b.sources[0]).toMatchObject({ queue: 'orders.dlq', drained: 3, orderSensitive: false }) },
    { name: 'source with a missing queue name', call: () => sources.POST(send('POST', '/api/sources', { queue: '' }), ctx({})), status: 400 },
    { name: 'source with malformed JSON', call: () => sources.POST(send('POST', '/api/sources', '{"queue":'), ctx({})), status: 400 },
    { name: 'source with an unknown field', call: () => sources.POST(send('POST', '/api/sources', { queue: 'x', bogus: 1 }), ctx({})), status: 400 },
    { name: 'duplicate source', call: () => sources.POST(send('POST', '/api/sources', { queue: 'orders.dlq' }), ctx({})), status: 409 },
    { name: 'source settings update', call: () => source.PATCH(send('PATCH', '/api/sources/x', { orderSensitive: true, entityKey: { kind: 'jsonPointer', pointer: '/orderId' } }), ctx({ id: sourceId })), status: 200, check: (b) => expect(b).toMatchObject({ orderSensitive: true, entityKey: { kind: 'jsonPointer', pointer: '/orderId' } }) },
    { name: 'source update with a bad pointer', call: () => source.PATCH(send('PATCH', '/api/sources/x', { entityKey: { kind: 'jsonPointer', pointer: 'orderId' } }), ctx({ id: sourceId })), status: 400 },
    { name: 'unknown source', call: () => source.PATCH(send('PATCH', '/api/sources/x', { enabled: false }), ctx({ id: '999999' })), status: 404 },
    { name: 'non-numeric source id', call: () => source.DELETE(get('/api/sources/abc'), ctx({ id: 'abc' })), status: 404 },
    { name: 'deleting a source that holds messages', call: () => source.DELETE(get('/api/sources/x'), ctx({ id: sourceId })), status: 409 },
    { name: 'message list, newest failure first', call: () => messages.GET(get('/api/messages'), ctx({})), status: 200, check: (b) => { expect(b.messages).toHaveLength(3); expect(b.messages[2].entityKey).toBe('order-2'); expect(b.nextCursor).toBeNull() } },
    { name: 'message list page and cursor', call: () => messages.GET(get('/api/messages?limit=2'), ctx({})), status: 200, check: (b) => { expect(b.messages).toHaveLength(2); expect(typeof b.nextCursor).toBe('string') } },
    { name: 'message list filtered by entity', call: () => messages.GET(get('/api/messages?entity=order-2'), ctx({})), status: 200, check: (b) => expect(b.messages.map((m: any) => m.entityKey)).toEqual(['order-2']) },
    { name: 'message list text search', call: () => messages.GET(get('/api/messages?q=out%20of%20stock'), ctx({})), status: 200, check: (b) => expect(b.messages).toHaveLength(3) },
    { name: 'message list with a bad limit', call: () => messages.GET(get('/api/messages?limit=0'), ctx({})), status: 400 },
    { name: 'message list with a bad date', call: () => messages.GET(get('/api/messages?from=yesterday'), ctx({})), status: 400 },
    { name: 'message list with a forged cursor', call: () => messages.GET(get('/api/messages?cursor=bm9wZQ'), ctx({})), status: 400 },
    { name: 'message list with an unknown filter', call: () => messages.GET(get('/api/messages?colour=red'), ctx({})), status: 400 },
    { name: 'unknown message', call: () => message.GET(get('/api/messages/424242'), ctx({ id: '424242' })), status: 404 },
    { name: 'groups', call: () => groups.GET(get('/api/groups'), ctx({})), status: 200, check: (b) => expect(b.groups[0]).toMatchObject({ count: 3, status: 'open', sources: ['orders.dlq'], services: ['orders'], serviceVersions: ['1.5.0'] }) },
    { name: 'groups with a bad sort', call: () => groups.GET(get('/api/groups?sort=random'), ctx({})), status: 400 },
  ]

  for (const c of cases) {
    it(c.name, async () => {
      const response = await c.call()
      const body = await response.json()
      expect(response.status, JSON.stringify(body)).toBe(c.status)
      if (c.status >= 400) expect(body.error.message).toEqual(expect.any(String))
      c.check?.(body)
    })
  }

  it('message detail carries typed headers that JSON cannot hold exactly as {type, value}', async () => {
    const response = await message.GET(get(`/api/messages/${messageId}`), ctx({ id: messageId }))
    const detail = await response.json()
    expect(detail.headers['x-retries']).toEqual({ type: 'int64', value: '9007199254740993' })
    expect(detail.headers['x-note']).toBe('hello')
    expect(detail.headersTyped['x-retries']).toEqual({ t: 'l', v: '9007199254740993' })
    expect(detail).toMatchObject({ origin: { exchange: 'orders', routingKeys: ['order.created'], queue: 'orders.work' }, error: { type: 'com.acme.StockException' } })
  })

  it('raw body comes back byte for byte as a download', async () => {
    const list = await (await messages.GET(get('/api/messages'), ctx({}))).json()
    const binary = list.messages.find((m: any) => m.bodyEncoding === 'binary')
    const response = await messageBody.GET(get(`/api/messages/${binary.id}/body`), ctx({ id: binary.id }))
    expect(response.headers.get('content-type')).toBe('application/octet-stream')
    expect(response.headers.get('content-disposition')).toContain('attachment')
    expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([0xff, 0x00, 0xfe]))
  })

  it('keeps a short preview of long text bodies, whole bodies beside it, and x-death in the headers only', async () => {
    const text = JSON.stringify({ orderId: 'order-long', note: 'é'.repeat(3000) })
    const death = { t: 'A', v: [{ t: 'F', v: { count: { t: 'l', v: '2' }, queue: { t: 'S', v: 'orders.work' }, reason: { t: 'S', v: 'rejected' } } }] }
    const long = row({ body: Buffer.from(text), bodyPreview: text, entityKey: 'order-long', headersJson: JSON.stringify({ 'x-death': death }) })
    const huge = row({ body: Buffer.from(text.repeat(4)), bodyPreview: text.repeat(4), entityKey: 'order-huge' })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: [long, huge] })
    const { rows } = await db.sql.query<{ id: string; entity_key: string; preview: number; body: number; x_death: unknown }>(
      `SELECT id::text, entity_key, length(body_preview) AS preview, octet_length(body) AS body, x_death FROM dead_letters WHERE entity_key IN ('order-long', 'order-huge') ORDER BY entity_key`,
    )
    // Both the SQL-cut preview (bodies up to 8 KiB) and the one sent for longer bodies stop at 512 characters.
    expect(rows.map((r) => [r.entity_key, r.preview, r.body])).toEqual([['order-huge', 512, Buffer.byteLength(text) * 4], ['order-long', 512, Buffer.byteLength(text)]])
    expect(rows[1].x_death).toBeNull()
    const detail = await (await message.GET(get(`/api/messages/${rows[1].id}`), ctx({ id: rows[1].id }))).json()
    expect(detail.xDeath).toEqual([expect.objectContaining({ queue: 'orders.work', reason: 'rejected', count: 2 })])
    const body = await messageBody.GET(get(`/api/messages/${rows[1].id}/body`), ctx({ id: rows[1].id }))
    expect(await body.text()).toBe(text)
  })
})
