import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { waitFor } from '../helpers/broker'
import * as groupsRoute from '@/app/api/groups/route'
import * as groupRoute from '@/app/api/groups/[id]/route'
import * as messagesRoute from '@/app/api/messages/route'
import * as countRoute from '@/app/api/messages/count/route'
import * as messageRoute from '@/app/api/messages/[id]/route'
import * as summaryRoute from '@/app/api/summary/route'
import * as sourcesRoute from '@/app/api/sources/route'
import { getConfig } from '@/lib/server/platform/config'
import { readExportPages } from '@/lib/server/export/export-rows'
import { getGroup } from '@/lib/server/groups/get-group'
import { groupBreakdown } from '@/lib/server/groups/group-breakdown'
import { listGroups } from '@/lib/server/groups/list-groups'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { listMessages } from '@/lib/server/messages/list-messages'
import { indexSearchBacklog, searchBacklogSize } from '@/lib/server/engines/search-indexer/search-index-store'
import { getSummary } from '@/lib/server/summary/get-summary'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'

const base = 'http://lazarus.test'
const get = (path: string) => new Request(base + path, { headers: ADMIN_AUTH })
const ctx = <P>(params: P) => ({ params: Promise.resolve(params) })
const HOUR = 3_600_000
const DAY = 24 * HOUR
const FLOOD = 10_050

let serial = 0
function row(overrides: Partial<IngestRow> & { failedAt: Date }): IngestRow {
  const body = overrides.body ?? Buffer.from(JSON.stringify({ orderId: overrides.entityKey ?? null, n: serial }))
  return {
    fingerprint: createHash('sha256').update(`triage-${serial++}`).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8'),
    propertiesJson: '{}', headersJson: '{}', deliveryExchange: '', deliveryRoutingKey: 'dlq',
    deathReason: 'rejected', attempts: 1, originExchange: null, originRoutingKeys: [], originQueue: null,
    firstDeathAt: null, lastDeathAt: null,
    errorType: 'com.acme.StockException', errorMessage: 'SKU 1 out of stock', errorStack: null, failureKind: 'exhausted',
    service: 'orders', serviceVersion: '1.5.0', framework: 'lazarus', entityKey: null,
    signature: 'v1:triage-stock', title: 'StockException: SKU <int> out of stock', messagePattern: null,
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    ...overrides,
  }
}

type Json = any

describe('triage read API', () => {
  let db: TestDb
  const now = new Date()
  const hourStart = Math.floor(now.getTime() / HOUR) * HOUR
  const dayStart = Math.floor(now.getTime() / DAY) * DAY
  const source: Record<'orders' | 'billing', string> = { orders: '', billing: '' }
  const group: Record<'stock' | 'timeout' | 'entity' | 'flood', string> = { stock: '', timeout: '', entity: '', flood: '' }

  const call = async (response: Promise<Response>) => {
    const r = await response
    return { status: r.status, body: (await r.json()) as Json }
  }
  const messages = (query = '') => call(messagesRoute.GET(get(`/api/messages${query}`), ctx({})))
  /** Every page of a list, following nextCursor; fails on a repeated id. */
  async function allPages(query: Record<string, string>, limit = 500): Promise<string[]> {
    const ids: string[] = []
    let cursor: string | null = null
    do {
      const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) })
      const { status, body } = await messages(`?${params}`)
      expect(status, JSON.stringify(body)).toBe(200)
      ids.push(...body.messages.map((m: Json) => m.id))
      cursor = body.nextCursor
    } while (cursor)
    expect(new Set(ids).size).toBe(ids.length)
    return ids
  }
  /** The expected rows, in list order, by a plain SQL condition (no index tricks). */
  async function expected(where: string, params: unknown[] = []): Promise<string[]> {
    const { rows } = await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters JOIN message_statuses st ON st.dead_letter_id = id
       WHERE ${where} ORDER BY failed_at DESC, id DESC`, params)
    return rows.map((r) => r.id)
  }

  beforeAll(async () => {
    db = await createTestDb()
    for (const queue of ['orders.dlq', 'billing.dlq'] as const) {
      const created = await sourcesRoute.POST(new Request(`${base}/api/sources`, { method: 'POST', body: JSON.stringify({ queue, confirmNotWorkQueue: true }), headers: ADMIN_AUTH }), ctx({}))
      source[queue === 'orders.dlq' ? 'orders' : 'billing'] = (await created.json()).id
    }
    const currentHour = new Date(hourStart + Math.floor((now.getTime() - hourStart) / 2))
    const stock = (failedAt: Date, o: Partial<IngestRow> = {}) => row({ failedAt, ...o })
    const orders = [
      // 24h sparkline: 3 in the current hour (bucket 23), 2 five hours back (bucket 18), 1 binary two hours back (bucket 21).
      stock(currentHour, { serviceVersion: '1.6.0', failureKind: 'transient', entityKey: 'order-7' }),
      stock(currentHour, { serviceVersion: '1.6.0', failureKind: 'transient', entityKey: 'order-8' }),
      stock(currentHour, { serviceVersion: '1.6.0', failureKind: 'transient', entityKey: 'order-9' }),
      stock(new Date(hourStart - 5 * HOUR + 10 * 60_000), { entityKey: 'order-7' }),
      stock(new Date(hourStart - 5 * HOUR + 11 * 60_000), { entityKey: 'order-7' }),
      stock(new Date(hourStart - 2 * HOUR + 60_000), {
        body: Buffer.from([0xff, 0x00, 0xfe]), bodyEncoding: 'binary', bodyPreview: null, service: null, serviceVersion: null, failureKind: 'unknown',
      }),
      stock(new Date(now.getTime() - 10 * DAY)),
      ...Array.from({ length: 8 }, (_, i) =>
        row({
          failedAt: new Date(now.getTime() - 3 * DAY - i * HOUR), entityKey: 'order-7', serviceVersion: '1.6.0', failureKind: 'invalid',
          signature: 'v1:triage-entity', title: 'ValidationException: bad order', errorType: 'com.acme.ValidationException', errorMessage: 'bad order',
        }),
      ),
    ]
    const timeout = (i: number, o: Partial<IngestRow> = {}) =>
      row({
        failedAt: new Date(now.getTime() - 2 * 60_000 - i * 1000), signature: 'v1:triage-timeout', title: 'TimeoutException: billing',
        errorType: 'java.net.SocketTimeoutException', errorMessage: `billing timed out after ${i} ms`, failureKind: 'transient',
        service: 'billing', serviceVersion: '2.0.0', ...o,
      })
    const rareBody = Buffer.from(JSON.stringify({ invoice: 'inv-1', note: 'customer lives in Zanzibarquux' }))
    const billing = [
      stock(new Date(hourStart - 30 * HOUR + 5 * 60_000), { entityKey: 'order-7' }),
      timeout(0, { body: rareBody, bodyPreview: rareBody.toString('utf8') }),
      timeout(1, { errorMessage: 'billing said Flibbertigibbet and hung up' }),
      timeout(2, { entityKey: 'order-7' }),
      timeout(3, { entityKey: 'order-7', status: 'held' }),
      timeout(4, { body: Buffer.from('x'.repeat(1000)), bodyEncoding: 'text', bodyPreview: 'x'.repeat(1000) }),
    ]
    await storeBatch({ sql: db.sql, sourceId: source.orders, sourceLabel: 'orders.dlq', rows: orders })
    await storeBatch({ sql: db.sql, sourceId: source.billing, sourceLabel: 'billing.dlq', rows: billing })
    // Enough of one group to cross the exact-count cap; failures share timestamps in threes to exercise the id tie-break.
    for (let start = 0; start < FLOOD; start += 1000) {
      const rows = Array.from({ length: Math.min(1000, FLOOD - start) }, (_, k) => {
        const i = start + k
        const body = Buffer.from(JSON.stringify({ batch: `nightly-${i}` }))
        return row({
          failedAt: new Date(now.getTime() - 2 * DAY - Math.floor(i / 3) * 1000), body, bodyPreview: body.toString('utf8'),
          signature: 'v1:triage-flood', title: 'QueueOverflow', errorType: null, errorMessage: null, failureKind: 'overflow',
          service: 'batch', serviceVersion: '0.1.0',
        })
      })
      await storeBatch({ sql: db.sql, sourceId: source.billing, sourceLabel: 'billing.dlq', rows })
    }
    const { rows: groups } = await db.sql.query<{ id: string; signature: string }>('SELECT id::text, signature FROM error_groups')
    for (const g of groups) group[g.signature.replace('v1:triage-', '') as keyof typeof group] = g.id
    // What replay and resolve will do to statuses later; the read side only has to filter on them.
    await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at) SELECT id, 'resolved', failed_at FROM dead_letters WHERE group_id = $1 AND failed_at < $2 AND failed_at > $3
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = excluded.status`, [group.stock, new Date(hourStart - 4 * HOUR), new Date(hourStart - 6 * HOUR)])
    await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at) SELECT id, 'replayed', failed_at FROM dead_letters WHERE id = (SELECT min(id) FROM dead_letters WHERE group_id = $1)
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = excluded.status`, [group.flood])
    await db.sql.query(`UPDATE error_groups SET status = 'acknowledged' WHERE id = $1`, [group.timeout])
    await db.sql.query('ANALYZE dead_letters')
  })
  afterAll(async () => db?.drop())

  describe('GET /api/messages filters', () => {
    const cases: { name: string; query: () => Record<string, string>; where: () => [string, unknown[]]; count: number }[] = [
      { name: 'everything', query: () => ({}), where: () => ['TRUE', []], count: 15 + 6 + FLOOD },
      { name: 'group', query: () => ({ group: group.stock }), where: () => ['group_id = $1', [group.stock]], count: 8 },
      { name: 'source', query: () => ({ source: source.billing }), where: () => ['source_id = $1', [source.billing]], count: 6 + FLOOD },
      { name: 'status held', query: () => ({ status: 'held' }), where: () => [`status = 'held'`, []], count: 1 },
      { name: 'status resolved', query: () => ({ status: 'resolved' }), where: () => [`status = 'resolved'`, []], count: 2 },
      { name: 'status dead', query: () => ({ status: 'dead' }), where: () => [`status = 'dead'`, []], count: 15 + 6 + FLOOD - 4 },
      { name: 'failure kind', query: () => ({ failureKind: 'unknown' }), where: () => [`failure_kind = 'unknown'`, []], count: 1 },
      { name: 'service', query: () => ({ service: 'billing' }), where: () => [`service = 'billing'`, []], count: 5 },
      { name: 'service version alone', query: () => ({ serviceVersion: '1.5.0' }), where: () => [`service_version = '1.5.0'`, []], count: 4 },
      { name: 'service and version', query: () => ({ service: 'orders', serviceVersion: '1.6.0' }), where: () => [`service = 'orders' AND service_version = '1.6.0'`, []], count: 11 },
      { name: 'entity', query: () => ({ entity: 'order-7' }), where: () => [`entity_key = 'order-7'`, []], count: 14 },
      {
        name: 'time window',
        query: () => ({ from: new Date(hourStart - 6 * HOUR).toISOString(), to: new Date(hourStart - 4 * HOUR).toISOString() }),
        where: () => ['failed_at >= $1 AND failed_at < $2', [new Date(hourStart - 6 * HOUR), new Date(hourStart - 4 * HOUR)]],
        count: 2,
      },
      { name: 'rare term in a body, any case', query: () => ({ q: 'ZANZIBARquux' }), where: () => [`body_preview ILIKE '%zanzibarquux%'`, []], count: 1 },
      { name: 'rare term in an error message', query: () => ({ q: 'flibbertigibbet' }), where: () => [`error_message ILIKE '%flibbertigibbet%'`, []], count: 1 },
      { name: 'term in the error type', query: () => ({ q: 'SocketTimeout' }), where: () => [`error_type ILIKE '%sockettimeout%'`, []], count: 5 },
      { name: 'search combined with a filter', query: () => ({ q: 'order-7', group: group.entity }), where: () => [`group_id = $1`, [group.entity]], count: 8 },
      { name: 'wildcards in a term are literal', query: () => ({ q: '100%' }), where: () => ['FALSE', []], count: 0 },
      { name: 'filters combine', query: () => ({ source: source.billing, status: 'held', entity: 'order-7' }), where: () => [`status = 'held'`, []], count: 1 },
    ]
    for (const c of cases) {
      it(`${c.name}: every matching row once, in list order`, async () => {
        const [where, params] = c.where()
        const want = await expected(where, params)
        expect(want).toHaveLength(c.count)
        expect(await allPages(c.query())).toEqual(want)
      })
    }

    it('a status filter pages in list order along the status index, ties broken by id, in the list and the export', async () => {
      // 30 flood messages, which share failure times in threes, become replayed for the length of this test.
      const { rows: marked } = await db.sql.query<{ id: string }>(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at)
         SELECT id, 'replayed', failed_at FROM dead_letters WHERE group_id = $1 ORDER BY id OFFSET 1 LIMIT 30 RETURNING dead_letter_id::text AS id`, [group.flood])
      try {
        const want = await expected(`status = 'replayed'`)
        expect(want).toHaveLength(31)
        expect(await allPages({ status: 'replayed' }, 4)).toEqual(want)
        const exported: string[] = []
        for await (const page of readExportPages(db.sql, { filter: { status: 'replayed' } }, { pageRows: 4 })) exported.push(...page.map((r) => r.id))
        expect(exported).toEqual(want)
      } finally {
        await db.sql.query('DELETE FROM dead_letter_states WHERE dead_letter_id = ANY($1::bigint[])', [marked.map((r) => r.id)])
      }
    })

    it('pages of 7 through a search cover every match once, in order, however the search is planned', async () => {
      const want = await expected(`body_preview ILIKE '%nightly-1%'`)
      expect(want.length).toBeGreaterThan(1000)
      const walk = async (searchWindow: number, maxSearchWindow: number) => {
        const ids: string[] = []
        let cursor: string | undefined
        for (let page = 0; page < 400; page++) {
          const result = await listMessages({ db, query: listMessagesQuerySchema.parse({ q: 'nightly-1', limit: '7', ...(cursor ? { cursor } : {}) }), searchWindow, maxSearchWindow })
          ids.push(...result.messages.map((m) => m.id))
          if (!result.nextCursor) break
          cursor = result.nextCursor
        }
        return ids
      }
      // The default walks of the newest rows answer the dense pages and the trigram index the sparse tail; a walk of
      // 5 rows never finds 8 matches, so every page goes through the index; a walk of 20 extended up to 200 rows mixes all three.
      const everyPlan = async () => {
        expect(await walk(1_000, 10_000)).toEqual(want)
        expect(await walk(5, 5)).toEqual(want)
        expect(await walk(20, 200)).toEqual(want)
      }
      // Freshly stored rows are found through the search backlog; indexed ones through dead_letter_search; a half-indexed
      // store mixes both, and the answers must not change as the indexer catches up.
      expect((await searchBacklogSize({ sql: db.sql })).ranges).toBeGreaterThan(0)
      await everyPlan()
      await indexSearchBacklog({ sql: db.sql, ranges: 6 })
      await everyPlan()
      while ((await indexSearchBacklog({ sql: db.sql })).more);
      expect(await searchBacklogSize({ sql: db.sql })).toEqual({ ranges: 0, ids: 0 })
      await everyPlan()
    })

    it('list items carry a short text preview of the body, none for binary bodies', async () => {
      const { body } = await messages(`?group=${group.stock}&limit=50`)
      const binary = body.messages.find((m: Json) => m.bodyEncoding === 'binary')
      expect(binary.bodyPreview).toBeNull()
      expect(body.messages.find((m: Json) => m.entityKey === 'order-7').bodyPreview).toContain('order-7')
      const long = (await messages(`?service=billing&q=xxxxxxxx`)).body.messages[0]
      expect(long.bodyPreview).toBe('x'.repeat(200))
    })
  })

  const bad: { name: string; call: () => Promise<Response> }[] = [
    { name: 'messages: from after to', call: () => messagesRoute.GET(get(`/api/messages?from=2026-11-02&to=2026-11-01`), ctx({})) },
    { name: 'messages: a date that is not ISO', call: () => messagesRoute.GET(get('/api/messages?from=Nov%201%202026'), ctx({})) },
    { name: 'messages: unknown status', call: () => messagesRoute.GET(get('/api/messages?status=gone'), ctx({})) },
    { name: 'messages: non-numeric group', call: () => messagesRoute.GET(get('/api/messages?group=abc'), ctx({})) },
    { name: 'count: a paging parameter', call: () => countRoute.GET(get('/api/messages/count?limit=5'), ctx({})) },
    { name: 'count: a cursor', call: () => countRoute.GET(get('/api/messages/count?cursor=abc'), ctx({})) },
    { name: 'count: unknown failure kind', call: () => countRoute.GET(get('/api/messages/count?failureKind=meh'), ctx({})) },
    { name: 'count: from after to', call: () => countRoute.GET(get('/api/messages/count?from=2026-11-02&to=2026-11-01'), ctx({})) },
    { name: 'groups: bad sort', call: () => groupsRoute.GET(get('/api/groups?sort=random'), ctx({})) },
    { name: 'groups: bad status', call: () => groupsRoute.GET(get('/api/groups?status=closed'), ctx({})) },
    { name: 'groups: bad from', call: () => groupsRoute.GET(get('/api/groups?from=yesterday'), ctx({})) },
    { name: 'groups: from after to', call: () => groupsRoute.GET(get('/api/groups?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z'), ctx({})) },
    { name: 'groups: limit 0', call: () => groupsRoute.GET(get('/api/groups?limit=0'), ctx({})) },
    { name: 'groups: limit too big', call: () => groupsRoute.GET(get('/api/groups?limit=501'), ctx({})) },
    { name: 'groups: unknown parameter', call: () => groupsRoute.GET(get('/api/groups?colour=red'), ctx({})) },
    { name: 'group: unknown range', call: () => groupRoute.GET(get('/api/groups/1?range=1y'), ctx({ id: group.stock })) },
    { name: 'group: unknown parameter', call: () => groupRoute.GET(get('/api/groups/1?sort=count'), ctx({ id: group.stock })) },
  ]
  for (const c of bad) {
    it(`400 for ${c.name}`, async () => {
      const { status, body } = await call(c.call())
      expect(status, JSON.stringify(body)).toBe(400)
      expect(body.error).toMatchObject({ code: 'invalid', message: expect.any(String) })
    })
  }

  const missing: { name: string; call: () => Promise<Response> }[] = [
    { name: 'group', call: () => groupRoute.GET(get('/api/groups/987654'), ctx({ id: '987654' })) },
    { name: 'non-numeric group id', call: () => groupRoute.GET(get('/api/groups/abc'), ctx({ id: 'abc' })) },
    { name: 'message', call: () => messageRoute.GET(get('/api/messages/987654'), ctx({ id: '987654' })) },
  ]
  for (const c of missing) {
    it(`404 for an unknown ${c.name}`, async () => {
      const { status, body } = await call(c.call())
      expect(status).toBe(404)
      expect(body.error).toMatchObject({ code: 'not_found', message: expect.any(String) })
    })
  }

  describe('GET /api/messages/count', () => {
    const cases: { name: string; query: () => string; want: (b: Json) => void }[] = [
      { name: 'exact below the cap', query: () => `group=${group.stock}`, want: (b) => expect(b).toEqual({ count: 8, estimated: false, method: 'exact' }) },
      { name: 'exact for a search', query: () => 'q=zanzibarquux', want: (b) => expect(b).toEqual({ count: 1, estimated: false, method: 'exact' }) },
      { name: 'exact for nothing', query: () => 'status=held&service=orders', want: (b) => expect(b).toEqual({ count: 0, estimated: false, method: 'exact' }) },
      { name: "a big group: the group's counter", query: () => `group=${group.flood}`, want: (b) => expect(b).toEqual({ count: FLOOD, estimated: true, method: 'counter' }) },
      { name: 'no filter: the stored counter', query: () => '', want: (b) => expect(b).toEqual({ count: 15 + 6 + FLOOD, estimated: true, method: 'counter' }) },
      {
        name: 'a broad filter: the planner estimate, never below the cap',
        query: () => 'failureKind=overflow',
        want: (b) => {
          expect(b).toMatchObject({ estimated: true, method: 'planner' })
          expect(b.count).toBeGreaterThan(10_000)
        },
      },
    ]
    for (const c of cases) {
      it(c.name, async () => {
        const { status, body } = await call(countRoute.GET(get(`/api/messages/count?${c.query()}`), ctx({})))
        expect(status, JSON.stringify(body)).toBe(200)
        c.want(body)
      })
    }
  })

  describe('GET /api/groups', () => {
    const names = (body: Json) => body.groups.map((g: Json) => Object.entries(group).find(([, id]) => id === g.id)?.[0])
    const cases: { name: string; query: string; want: (b: Json) => void }[] = [
      {
        name: 'every group keeps its fields and gets a 24-hour sparkline',
        query: '',
        want: (b) => {
          expect(b.groups).toHaveLength(4)
          for (const g of b.groups) {
            expect(g).toMatchObject({ id: expect.any(String), title: expect.any(String), count: expect.any(Number), ratePerMinute: { last5: expect.any(Number), last60: expect.any(Number) }, status: expect.any(String) })
            expect(g.sparkline).toHaveLength(24)
          }
          const stock = b.groups.find((g: Json) => g.id === group.stock)
          expect(stock).toMatchObject({ count: 8, sources: ['billing.dlq', 'orders.dlq'], services: ['orders'], serviceVersions: ['1.5.0', '1.6.0'] })
          expect(stock.sparkline.reduce((a: number, n: number) => a + n, 0)).toBe(6)
        },
      },
      { name: 'by source queue', query: '?source=billing.dlq', want: (b) => expect(names(b).sort()).toEqual(['flood', 'stock', 'timeout']) },
      { name: 'by status', query: '?status=acknowledged', want: (b) => expect(names(b)).toEqual(['timeout']) },
      { name: 'by failure kind', query: '?failureKind=overflow', want: (b) => expect(names(b)).toEqual(['flood']) },
      { name: 'by service', query: '?service=billing', want: (b) => expect(names(b)).toEqual(['timeout']) },
      { name: 'active since', query: `?from=${new Date(now.getTime() - HOUR).toISOString()}`, want: (b) => expect(names(b).sort()).toEqual(['stock', 'timeout']) },
      { name: 'started before', query: `?to=${new Date(now.getTime() - 5 * DAY).toISOString()}`, want: (b) => expect(names(b)).toEqual(['stock']) },
      {
        name: 'active within a window',
        query: `?from=${new Date(now.getTime() - 4 * DAY).toISOString()}&to=${new Date(now.getTime() - 2.5 * DAY).toISOString()}`,
        want: (b) => expect(names(b).sort()).toEqual(['entity', 'stock']),
      },
      {
        name: 'sorted by count',
        query: '?sort=count',
        want: (b) => {
          expect([names(b)[0], names(b)[3]]).toEqual(['flood', 'timeout'])
          expect(b.groups.map((g: Json) => g.count)).toEqual([FLOOD, 8, 8, 5])
        },
      },
      { name: 'sorted by rate', query: '?sort=rate', want: (b) => expect(names(b)[0]).toBe('timeout') },
      {
        name: 'sorted by last seen',
        query: '?sort=lastSeen',
        want: (b) => {
          const seen = b.groups.map((g: Json) => g.lastSeen)
          expect(seen).toEqual([...seen].sort().reverse())
          expect(names(b).slice(2)).toEqual(['flood', 'entity'])
        },
      },
      { name: 'limited', query: '?sort=count&limit=2', want: (b) => expect(b.groups.map((g: Json) => g.count)).toEqual([FLOOD, 8]) },
    ]
    for (const c of cases) {
      it(c.name, async () => {
        const { status, body } = await call(groupsRoute.GET(get(`/api/groups${c.query}`), ctx({})))
        expect(status, JSON.stringify(body)).toBe(200)
        c.want(body)
      })
    }

    it('sparkline buckets are clock hours, oldest first, the current hour last', async () => {
      const { groups } = await listGroups({ db, query: { sort: 'count', limit: 10 }, now })
      const stock = groups.find((g) => g.id === group.stock)!
      const want = new Array(24).fill(0)
      want[23] = 3
      want[21] = 1
      want[18] = 2
      expect(stock.sparkline).toEqual(want)
      const timeout = groups.find((g) => g.id === group.timeout)!
      // Two minutes ago may still be the previous hour.
      expect(timeout.sparkline[22] + timeout.sparkline[23]).toBe(5)
      expect(timeout.ratePerMinute).toEqual({ last5: 1, last60: round(5 / 60) })
    })
  })

  describe('GET /api/groups/{id}', () => {
    const detail = (id: string, query = '') => call(groupRoute.GET(get(`/api/groups/${id}${query}`), ctx({ id })))
    const sum = (arrivals: { count: number }[]) => arrivals.reduce((a, b) => a + b.count, 0)

    it('defaults to 24 hourly buckets with the group, its sparkline and a breakdown of its messages', async () => {
      const { status, body } = await detail(group.stock)
      expect(status).toBe(200)
      expect(body).toMatchObject({ range: '24h', bucket: 'hour', breakdownSampled: false, breakdownRows: 8 })
      expect(body.group).toMatchObject({ id: group.stock, count: 8, title: 'StockException: SKU <int> out of stock' })
      expect(body.group.sparkline).toHaveLength(24)
      expect(body.arrivals).toHaveLength(24)
      expect(sum(body.arrivals)).toBe(6)
      expect(body.breakdown).toEqual({
        sources: [{ id: source.orders, value: 'orders.dlq', count: 7 }, { id: source.billing, value: 'billing.dlq', count: 1 }],
        services: [{ value: 'orders', count: 7 }, { value: null, count: 1 }],
        serviceVersions: [{ value: '1.5.0', count: 4 }, { value: '1.6.0', count: 3 }, { value: null, count: 1 }],
        failureKinds: [{ value: 'exhausted', count: 4 }, { value: 'transient', count: 3 }, { value: 'unknown', count: 1 }],
      })
    })

    it('7d: 168 hourly buckets', async () => {
      const { body } = await detail(group.stock, '?range=7d')
      expect(body).toMatchObject({ range: '7d', bucket: 'hour' })
      expect(body.arrivals).toHaveLength(168)
      expect(sum(body.arrivals)).toBe(7)
    })

    it('30d: 30 daily buckets', async () => {
      const { body } = await detail(group.stock, '?range=30d')
      expect(body).toMatchObject({ range: '30d', bucket: 'day' })
      expect(body.arrivals).toHaveLength(30)
      expect(sum(body.arrivals)).toBe(8)
    })

    it('buckets start on clock hours and UTC days, and each arrival lands in the bucket holding its minute', async () => {
      const day = await getGroup({ db, id: group.stock, range: '24h', now })
      expect(day.arrivals[0].t).toBe(new Date(hourStart - 23 * HOUR).toISOString())
      expect(day.arrivals[23].t).toBe(new Date(hourStart).toISOString())
      expect(day.arrivals.map((a) => a.count)).toEqual(day.group.sparkline)
      expect([day.arrivals[23].count, day.arrivals[21].count, day.arrivals[18].count]).toEqual([3, 1, 2])

      const week = await getGroup({ db, id: group.stock, range: '7d', now })
      expect(week.arrivals[167 - 30].count).toBe(1)
      expect(week.arrivals[167].count).toBe(3)

      const month = await getGroup({ db, id: group.stock, range: '30d', now })
      expect(month.arrivals[0].t).toBe(new Date(dayStart - 29 * DAY).toISOString())
      expect(month.arrivals[29].t).toBe(new Date(dayStart).toISOString())
      const dayOf = (ms: number) => 29 - (dayStart - Math.floor(ms / DAY) * DAY) / DAY
      const want = new Array(30).fill(0)
      for (const t of [hourStart, hourStart, hourStart, hourStart - 5 * HOUR + 10 * 60_000, hourStart - 5 * HOUR + 11 * 60_000, hourStart - 2 * HOUR + 60_000, hourStart - 30 * HOUR + 5 * 60_000, now.getTime() - 10 * DAY]) {
        want[dayOf(t)]++
      }
      expect(month.arrivals.map((a) => a.count)).toEqual(want)
    })

    it('a breakdown over more messages than its cap counts the most recent ones and says so', async () => {
      const { rows } = await db.sql.query<{ count: number }>('SELECT count::int FROM error_groups WHERE id = $1', [group.flood])
      const sampled = await groupBreakdown({ sql: db.sql, group: { id: group.flood, count: rows[0].count }, cap: 100 })
      expect(sampled).toMatchObject({ breakdownSampled: true, breakdownRows: 100 })
      expect(sampled.breakdown.failureKinds).toEqual([{ value: 'overflow', count: 100 }])
      const whole = await groupBreakdown({ sql: db.sql, group: { id: group.stock, count: 8 }, cap: 8 })
      expect(whole).toMatchObject({ breakdownSampled: false, breakdownRows: 8 })
    })
  })

  describe('GET /api/messages/{id} related messages', () => {
    const detail = (id: string) => call(messageRoute.GET(get(`/api/messages/${id}`), ctx({ id })))

    it("sameGroup: the group's five most recent others; sameEntity: ten others of the entity, oldest first", async () => {
      const [id] = await expected('group_id = $1', [group.entity])
      const { status, body } = await detail(id)
      expect(status).toBe(200)
      expect(body.related.sameGroup.map((m: Json) => m.id)).toEqual((await expected('group_id = $1 AND id <> $2', [group.entity, id])).slice(0, 5))
      const entity = (await expected(`entity_key = 'order-7' AND id <> $1`, [id])).reverse().slice(0, 10)
      expect(body.related.sameEntity.map((m: Json) => m.id)).toEqual(entity)
      expect(body.related.sameEntity).toHaveLength(10)
      for (const m of body.related.sameEntity) expect(m).toMatchObject({ entityKey: 'order-7', bodyPreview: expect.any(String) })
    })

    it('a message without an entity key has no sameEntity, and is never its own relative', async () => {
      const [binary] = await expected(`body_encoding = 'binary'`)
      const { body } = await detail(binary)
      expect(body.related.sameEntity).toEqual([])
      expect(body.related.sameGroup).toHaveLength(5)
      expect(body.related.sameGroup.map((m: Json) => m.id)).not.toContain(binary)
    })
  })

  describe('GET /api/summary', () => {
    it('totals from the counters, sources with drained counts and depth, no drainer in this process', async () => {
      const { status, body } = await call(summaryRoute.GET(get('/api/summary'), ctx({})))
      expect(status).toBe(200)
      expect(body).toMatchObject({ stored: 15 + 6 + FLOOD, groups: 4, drainer: null, arrivalsLastHour: expect.any(Number) })
      expect(body.sources).toEqual([
        expect.objectContaining({ id: source.billing, queue: 'billing.dlq', drained: 6 + FLOOD, lastDrainAt: expect.any(String) }),
        expect.objectContaining({ id: source.orders, queue: 'orders.dlq', drained: 15, lastDrainAt: expect.any(String) }),
      ])
      for (const s of body.sources) expect(s.depth === null || typeof s.depth === 'number').toBe(true)
    })

    it('arrivalsLastHour counts the last 60 minutes of arrivals', async () => {
      expect((await getSummary({ db, engines: null, now })).arrivalsLastHour).toBe(5 + 3)
      expect((await getSummary({ db, engines: null, now: new Date(now.getTime() + 3 * HOUR) })).arrivalsLastHour).toBe(0)
    })

    it('a management API that hangs or refuses leaves depth out, says why, and does not hold the summary up', async () => {
      // A real listener that accepts connections and never answers, then a port nobody listens on.
      // Requests it has received and will never answer.
      let unanswered = 0
      const silent = createServer(() => {
        unanswered++
      })
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
      const config = getConfig()
      const original = config.RABBITMQ_MANAGEMENT_URL
      try {
        config.RABBITMQ_MANAGEMENT_URL = `http://guest:guest@127.0.0.1:${(silent.address() as AddressInfo).port}`
        const hung = await getSummary({ db, engines: null, depthTimeoutMs: 300 })
        // It asked this API, which never answers, and came back anyway: the depth's own 300 ms timer decided when (not
        // a connection error, not fetch's much longer timeout), and said so.
        await waitFor(async () => unanswered >= 1, { what: 'the summary to have asked the silent management API' })
        expect(hung.brokerError).toMatch(/did not answer within 300 ms/)
        expect(hung.sources.map((s) => s.depth)).toEqual([null, null])
        expect(hung.stored).toBe(15 + 6 + FLOOD)

        config.RABBITMQ_MANAGEMENT_URL = 'http://guest:guest@127.0.0.1:1'
        const refused = await getSummary({ db, engines: null })
        expect(refused.brokerError).toMatch(/management API unavailable/)
        expect(refused.sources.map((s) => s.drained)).toEqual([6 + FLOOD, 15])
      } finally {
        config.RABBITMQ_MANAGEMENT_URL = original
        silent.closeAllConnections()
        await new Promise((resolve) => silent.close(resolve))
      }
    })
  })
})

const round = (n: number) => Math.round(n * 100) / 100
