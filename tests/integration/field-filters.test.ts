import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as messages from '@/app/api/messages/route'
import * as count from '@/app/api/messages/count/route'
import * as exportRoute from '@/app/api/export/route'
import * as resolve from '@/app/api/messages/resolve/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callAs, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Header, property and x-death filters (lib/shared/schemas/field-filter.ts) against real stored rows, through the
 * routes: the list, the count, the export and a resolve of "everything matching" select the same messages, and a
 * viewer cannot match inside a value redaction masks (docs/security.md, "The search oracle").
 */

const ORIGIN = 'http://lazarus.test'
const SECRET = 'hunter2-Zq9'

const S = (v: string) => ({ t: 'S', v })
const death = (queue: string, reason: string, count: number) => ({ t: 'F', v: { count: { t: 'l', v: String(count) }, reason: S(reason), queue: S(queue) } })

/** The stored rows: name → typed headers and properties. */
const ROWS: Record<string, { headers: Record<string, unknown>; properties: Record<string, unknown> }> = {
  acme: {
    headers: { tenant: S('acme'), region: S('eu-west-1'), retries: { t: 'I', v: 3 }, password: S(SECRET), 'x-death': { t: 'A', v: [death('orders', 'rejected', 7), death('orders.retry', 'expired', 7)] } },
    properties: { messageId: 'm-acme', correlationId: 'corr-1', type: 'order.created', appId: 'shop', userId: 'guest' },
  },
  acmeCorp: {
    headers: { tenant: S('acme-corp'), region: S('us-east-1'), contact: S('mail ops@example.com'), 'x-death': { t: 'A', v: [death('orders', 'rejected', 2)] } },
    properties: { messageId: 'm-corp', correlationId: 'corr-2', type: 'order.updated' },
  },
  globex: {
    headers: { tenant: S('globex'), blob: { t: 'x', b64: 'AAE=' }, 'x-death': { t: 'A', v: [death('billing', 'delivery_limit', 20)] } },
    properties: { messageId: 'm-globex', type: 'invoice.sent', appId: 'billing' },
  },
  bare: { headers: {}, properties: {} },
}

describe('header, property and x-death filters', () => {
  let db: TestDb
  let admin: TestUser, viewer: TestUser
  const ids: Record<string, string> = {}
  const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0]

  const call = (who: TestUser, module: RouteModule, method: 'GET' | 'POST', path: string, body?: unknown) => callAs(who, module, method, ORIGIN + path, body)
  /** The names of the rows the list shows for `query`, sorted. */
  async function list(query: string, who: TestUser = admin): Promise<string[]> {
    const response = await call(who, messages, 'GET', `/api/messages?${query}`)
    expect(response.status, response.text).toBe(200)
    return (JSON.parse(response.text).messages as { id: string }[]).map((m) => name(m.id) ?? m.id).sort()
  }
  async function counted(query: string, who: TestUser = admin): Promise<number> {
    const response = await call(who, count, 'GET', `/api/messages/count?${query}`)
    expect(response.status, response.text).toBe(200)
    return JSON.parse(response.text).count
  }
  async function exported(query: string, who: TestUser = admin): Promise<string[]> {
    const response = await call(who, exportRoute, 'GET', `/api/export?format=jsonl&${query}`)
    expect(response.status, response.text).toBe(200)
    return response.text.trim() ? response.text.trim().split('\n').map((line) => name(JSON.parse(line).id) ?? '?').sort() : []
  }

  beforeAll(async () => {
    db = await createTestDb()
    admin = await createTestUser(db, 'ada', [{ role: 'admin' }])
    viewer = await createTestUser(db, 'vic', [{ role: 'viewer' }])
    const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    for (const [key, row] of Object.entries(ROWS)) {
      await storeBatch({ sql: db.sql, sourceId: source, sourceLabel: 'orders.dlq', rows: [ingestRow({ headersJson: JSON.stringify(row.headers), propertiesJson: JSON.stringify(row.properties), entityKey: key })] })
      ids[key] = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE entity_key = $1', [key])).rows[0].id
    }
  })
  afterAll(async () => db?.drop())

  it('headers: equality on the typed value\'s text, prefix, exists and not exists', async () => {
    expect(await list('h.tenant=acme')).toEqual(['acme'])
    expect(await list('h.tenant%5E=acme')).toEqual(['acme', 'acmeCorp'])
    expect(await list('h.retries=3')).toEqual(['acme'])
    expect(await list('h.region%3F=true')).toEqual(['acme', 'acmeCorp'])
    expect(await list('h.region%3F=false')).toEqual(['bare', 'globex'])
    // A value kept only as bytes exists, and equals nothing.
    expect(await list('h.blob%3F=true')).toEqual(['globex'])
    expect(await list('h.blob=AAE%3D')).toEqual([])
    expect(await list('h.nope=acme')).toEqual([])
  })

  it('properties: message id, correlation id, type, app id, user id', async () => {
    expect(await list('p.messageId=m-corp')).toEqual(['acmeCorp'])
    expect(await list('p.correlationId=corr-1')).toEqual(['acme'])
    expect(await list('p.type%5E=order.')).toEqual(['acme', 'acmeCorp'])
    expect(await list('p.appId=billing')).toEqual(['globex'])
    expect(await list('p.userId%3F=true')).toEqual(['acme'])
    expect(await list('p.appId%3F=false')).toEqual(['acmeCorp', 'bare'])
  })

  it('x-death: count at least or at most N, reason and queue of any entry', async () => {
    expect(await list('death.count%3E=7')).toEqual(['acme', 'globex'])
    expect(await list('death.count%3E=8')).toEqual(['globex'])
    expect(await list('death.count%3C=2')).toEqual(['acmeCorp'])
    expect(await list('death.reason=expired')).toEqual(['acme'])
    expect(await list('death.queue=billing')).toEqual(['globex'])
  })

  it('combines with each other and with the other filters; the count and the export select the same', async () => {
    expect(await list('h.tenant%5E=acme&death.count%3E=5')).toEqual(['acme'])
    expect(await list('h.tenant%5E=acme&entity=acmeCorp')).toEqual(['acmeCorp'])
    expect(await list('h.tenant%5E=acme&status=resolved')).toEqual([])
    for (const query of ['h.tenant%5E=acme', 'death.count%3E=7', 'p.type%5E=order.&h.region%3F=true', 'h.region%3F=false']) {
      const shown = await list(query)
      expect(await counted(query), query).toBe(shown.length)
      expect(await exported(query), query).toEqual(shown)
    }
  })

  it('rejects what it cannot read, naming it', async () => {
    for (const query of ['p.bogus=1', 'death.count%3E=many', 'h.tenant%3F=maybe', 'death.reason%5E=exp', 'h.tenant=']) {
      const response = await call(admin, messages, 'GET', `/api/messages?${query}`)
      expect(response.status, query).toBe(400)
      expect(JSON.parse(response.text).error.code, query).toBe('invalid')
    }
  })

  it('a viewer cannot match inside a masked header or property value, but can test that it exists', async () => {
    // The admin (raw access) finds the secret by value and by prefix; the viewer does not, by list, count or export.
    expect(await list(`h.password=${SECRET}`)).toEqual(['acme'])
    for (const query of [`h.password=${SECRET}`, 'h.password%5E=hun', 'h.password%5E=h', 'h.contact%5E=mail', 'h.contact=mail%20ops%40example.com']) {
      expect(await list(query, viewer), query).toEqual([])
      expect(await counted(query, viewer), query).toBe(0)
      expect(await exported(query, viewer), query).toEqual([])
    }
    const ticket = await call(viewer, exportRoute, 'GET', '/api/export?format=md&h.password%5E=h')
    expect(ticket.status).toBe(403)
    // Exists and not exists are allowed; so are values redaction leaves alone.
    expect(await list('h.password%3F=true', viewer)).toEqual(['acme'])
    expect(await list('h.password%3F=false', viewer)).toEqual(['acmeCorp', 'bare', 'globex'])
    expect(await list('h.tenant=acme', viewer)).toEqual(['acme'])
    expect(await counted('h.tenant%5E=acme', viewer)).toBe(2)
    expect(await list('death.queue=billing', viewer)).toEqual(['globex'])
  })

  it('a resolve of everything matching takes the same syntax in its JSON filter', async () => {
    const response = await call(admin, resolve, 'POST', '/api/messages/resolve', { selection: { filter: { 'h.tenant^': 'acme', 'death.count>': '5' } }, reason: 'tenant cleanup' })
    expect(response.status, response.text).toBe(200)
    expect(await list('status=resolved')).toEqual(['acme'])
    const { rows } = await db.sql.query<{ summary: string }>(`SELECT summary FROM audit_log WHERE action LIKE 'message%resolve%' OR action LIKE '%resolve%'`)
    expect(rows.map((r) => r.summary).join('\n')).toContain('h.tenant^=acme')
  })
})
