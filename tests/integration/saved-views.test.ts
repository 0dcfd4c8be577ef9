import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as views from '@/app/api/views/route'
import * as view from '@/app/api/views/[id]/route'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { createTestDb, type TestDb } from '../helpers/test-db'

/* Saved views: a name and a message-list query string, per user (README, "Saved views"). */

describe('saved views', () => {
  let db: TestDb
  let vera: TestUser, otto: TestUser

  async function call(who: TestUser, module: RouteModule, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, params: Record<string, string> = {}) {
    const response = await callRoute(
      module,
      method,
      new Request(`http://lazarus.test${path}`, { method, headers: { authorization: who.authorization, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) }),
      params,
    )
    return { status: response.status, json: await response.json() }
  }
  const names = async (who: TestUser) => ((await call(who, views, 'GET', '/api/views')).json.views as { name: string; query: string }[]).map((v) => `${v.name}: ${v.query}`)

  beforeAll(async () => {
    db = await createTestDb()
    vera = await createTestUser(db, 'vera', [{ role: 'viewer' }])
    otto = await createTestUser(db, 'otto', [{ role: 'operator' }])
  })
  afterAll(async () => db?.drop())

  it('saves, lists by name, replaces a view of the same name, and keeps each user\'s own', async () => {
    expect((await call(vera, views, 'POST', '/api/views', { name: 'Acme expired', query: '?h.tenant=acme&death.reason=expired&range=24h' })).status).toBe(201)
    expect((await call(vera, views, 'POST', '/api/views', { name: 'Big retries', query: 'death.count%3E=5' })).status).toBe(201)
    expect((await call(vera, views, 'POST', '/api/views', { name: 'Acme expired', query: 'h.tenant%5E=acme&status=dead' })).status).toBe(201)
    expect(await names(vera)).toEqual(['Acme expired: h.tenant%5E=acme&status=dead', 'Big retries: death.count%3E=5'])
    expect(await names(otto)).toEqual([])
  })

  it('refuses a query the message list would not read', async () => {
    for (const query of ['p.bogus=1', 'limit=5', 'status=nope', 'h.tenant=a&h.tenant=b', 'range=3y']) {
      const response = await call(vera, views, 'POST', '/api/views', { name: 'bad', query })
      expect(response.status, query).toBe(400)
    }
    expect((await call(vera, views, 'POST', '/api/views', { name: ' ', query: 'status=dead' })).status).toBe(400)
  })

  it('deletes one\'s own view only', async () => {
    const [first] = (await call(vera, views, 'GET', '/api/views')).json.views as { id: string }[]
    expect((await call(otto, view, 'DELETE', `/api/views/${first.id}`, undefined, { id: first.id })).status).toBe(404)
    expect((await call(vera, view, 'DELETE', `/api/views/${first.id}`, undefined, { id: first.id })).status).toBe(200)
    expect(await names(vera)).toEqual(['Big retries: death.count%3E=5'])
  })
})
