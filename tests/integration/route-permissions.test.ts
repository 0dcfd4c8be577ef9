import { readdirSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Permission } from '@/lib/shared/roles'
import { ADMIN_AUTH, createTestUser, type TestUser } from '../helpers/auth'
import { callRoute, methodsOf, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'

/*
 * Every route under app/api, called as every kind of caller (docs/security.md, "Roles"). The table below is the
 * permission each route must declare; a route missing from it, or declaring another, or none, fails. Callers that do
 * not hold the permission get 401 (anonymous) or 403; callers that do never get either (the request itself may
 * still be refused for what it asks: 400, 404, 409, 422).
 */

const EXPECTED: Record<string, Permission> = {
  'GET /api/alerts': 'alerts:read',
  'GET /api/alerts/events': 'alerts:read',
  'POST /api/alerts/rules': 'admin',
  'PATCH /api/alerts/rules/[id]': 'admin',
  'DELETE /api/alerts/rules/[id]': 'admin',
  'POST /api/alerts/webhooks': 'admin',
  'DELETE /api/alerts/webhooks/[id]': 'admin',
  'GET /api/audit': 'audit:read',
  'GET /api/auth/oidc/callback': 'public',
  'GET /api/auth/oidc/start': 'public',
  'GET /api/auth/session': 'public',
  'POST /api/auth/set-password': 'public',
  'POST /api/auth/setup': 'public',
  'POST /api/auth/sign-in': 'public',
  'POST /api/auth/sign-out': 'public',
  'GET /api/export': 'messages:read',
  'POST /api/guard/superseded': 'guard',
  'GET /api/groups': 'messages:read',
  'GET /api/groups/[id]': 'messages:read',
  'PATCH /api/groups/[id]': 'groups:triage',
  'GET /api/groups/[id]/ticket': 'messages:read',
  'GET /api/groups/[id]/traces': 'messages:read',
  'GET /api/health': 'public',
  'GET /api/messages': 'messages:read',
  'GET /api/messages/count': 'messages:read',
  'GET /api/messages/body-fields': 'messages:read',
  'POST /api/messages/resolve': 'messages:resolve',
  'POST /api/messages/restore': 'messages:resolve',
  'GET /api/messages/[id]/revisions': 'messages:raw',
  'POST /api/messages/[id]/revisions': 'messages:edit',
  'POST /api/messages/bulk-edit': 'messages:edit',
  'GET /api/messages/[id]': 'messages:read',
  'GET /api/messages/[id]/body': 'messages:raw',
  'GET /api/messages/[id]/ticket': 'messages:read',
  'GET /api/metrics': 'metrics',
  'GET /api/pauses': 'guard',
  'POST /api/pauses': 'pauses:write',
  'DELETE /api/pauses/[id]': 'pauses:write',
  'GET /api/pauses/guards': 'pauses:read',
  'GET /api/replays': 'messages:read',
  'POST /api/replays': 'messages:replay',
  'GET /api/replays/[id]': 'messages:read',
  'POST /api/replays/[id]/cancel': 'messages:replay',
  'POST /api/replays/[id]/approve': 'replays:approve',
  'POST /api/replays/[id]/reject': 'replays:approve',
  'GET /api/replays/[id]/arrived': 'messages:read',
  'GET /api/replays/[id]/edits': 'messages:raw',
  'GET /api/replays/[id]/items': 'messages:read',
  'GET /api/replays/[id]/refailures': 'messages:read',
  'POST /api/replays/[id]/resume': 'messages:replay',
  'GET /api/settings/redaction': 'admin',
  'PUT /api/settings/redaction': 'admin',
  'POST /api/settings/redaction/preview': 'admin',
  'GET /api/settings/replay-targets': 'messages:replay',
  'PUT /api/settings/replay-targets': 'admin',
  'GET /api/settings/replay-confirm': 'messages:replay',
  'GET /api/settings/replay-approval': 'messages:replay',
  'PUT /api/settings/replay-approval': 'admin',
  'PUT /api/settings/replay-confirm': 'admin',
  'GET /api/settings/traces': 'admin',
  'PUT /api/settings/traces': 'admin',
  'GET /api/settings/retention': 'admin',
  'GET /api/settings/webhooks': 'admin',
  'PUT /api/settings/webhooks': 'admin',
  'GET /api/sources': 'sources:read',
  'GET /api/sources/jetstream': 'sources:read',
  'POST /api/sources': 'admin',
  'PATCH /api/sources/[id]': 'admin',
  'DELETE /api/sources/[id]': 'admin',
  'GET /api/summary': 'messages:read',
  'GET /api/tokens': 'signed-in',
  'GET /api/topology': 'topology:read',
  'GET /api/topology/findings': 'topology:read',
  'POST /api/topology/findings/[id]/acknowledge': 'topology:write',
  'POST /api/topology/runs': 'topology:write',
  'POST /api/tokens': 'signed-in',
  'DELETE /api/tokens/[id]': 'signed-in',
  'POST /api/topology/builder/apply': 'admin',
  'POST /api/topology/builder/plan': 'topology:read',
  'GET /api/users': 'admin',
  'POST /api/users': 'admin',
  'PATCH /api/users/[id]': 'admin',
  'GET /api/views': 'messages:read',
  'POST /api/views': 'messages:read',
  'DELETE /api/views/[id]': 'messages:read',
}

type Caller = 'anonymous' | 'viewer' | 'operator' | 'admin' | 'billingOperator' | 'metricsToken' | 'guardToken'
const CALLERS: Caller[] = ['anonymous', 'viewer', 'operator', 'billingOperator', 'metricsToken', 'guardToken', 'admin']

/** Who holds each permission, written out rather than computed, so the test checks the rules instead of restating them. */
const HOLDERS: Record<Permission, Caller[]> = {
  public: CALLERS,
  'signed-in': ['viewer', 'operator', 'billingOperator', 'admin'],
  'messages:read': ['viewer', 'operator', 'billingOperator', 'admin'],
  'messages:raw': ['operator', 'billingOperator', 'admin'],
  'messages:replay': ['operator', 'billingOperator', 'admin'],
  // Source-bound like replaying; whether the caller may decide (not a token, not the requester) is the route's answer.
  'replays:approve': ['operator', 'billingOperator', 'admin'],
  'messages:resolve': ['operator', 'billingOperator', 'admin'],
  'messages:edit': ['operator', 'billingOperator', 'admin'],
  'groups:triage': ['operator', 'billingOperator', 'admin'],
  'pauses:read': ['viewer', 'operator', 'billingOperator', 'admin'],
  'pauses:write': ['operator', 'billingOperator', 'admin'],
  'audit:read': ['operator', 'admin'],
  'alerts:read': ['viewer', 'operator', 'admin'],
  'sources:read': ['viewer', 'operator', 'billingOperator', 'admin'],
  // The graph names every queue of the vhost, so a binding limited to some sources does not open it.
  'topology:read': ['viewer', 'operator', 'admin'],
  'topology:write': ['operator', 'admin'],
  admin: ['admin'],
  metrics: ['metricsToken', 'admin'],
  guard: ['guardToken', 'viewer', 'operator', 'billingOperator', 'admin'],
}

const API_DIR = path.resolve(import.meta.dirname, '../../app/api')

function discoverRoutes(): string[] {
  return (readdirSync(API_DIR, { recursive: true }) as string[])
    .filter((f) => f.endsWith('route.ts'))
    .map((f) => `/api/${path.dirname(f)}`.replace(/\/\.$/, ''))
    .sort()
}

describe('every route declares its permission, and every caller gets what it allows', () => {
  let db: TestDb
  const auth: Partial<Record<Caller, string>> = {}
  const ids: Record<string, string> = {}
  const routes = discoverRoutes()
  const modules = new Map<string, RouteModule>()

  beforeAll(async () => {
    db = await createTestDb()
    const loaders = import.meta.glob<RouteModule>('../../app/api/**/route.ts')
    for (const route of routes) modules.set(route, await loaders[`../../app${route}/route.ts`]())
    const users: Record<string, TestUser> = {
      viewer: await createTestUser(db, 'matrix-viewer', [{ role: 'viewer' }]),
      operator: await createTestUser(db, 'matrix-operator', [{ role: 'operator' }]),
      billingOperator: await createTestUser(db, 'matrix-billing', [{ role: 'operator', sourcePattern: 'billing.*' }]),
      admin: await createTestUser(db, 'matrix-admin', [{ role: 'admin' }]),
      metricsToken: await createTestUser(db, 'matrix-metrics', [{ role: 'admin' }], { scope: 'metrics' }),
      guardToken: await createTestUser(db, 'matrix-guard', [{ role: 'operator' }], { scope: 'guard', guardQueue: 'orders.work' }),
    }
    for (const [caller, user] of Object.entries(users)) auth[caller as Caller] = user.authorization
    const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('orders.dlq') RETURNING id::text`)).rows[0].id
    await storeBatch({ sql: db.sql, sourceId: source, sourceLabel: 'orders.dlq', rows: [ingestRow({ signature: 'v1:matrix', title: 'Boom: matrix' })] })
    ids.message = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters LIMIT 1')).rows[0].id
    ids.group = (await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups LIMIT 1')).rows[0].id
    // Routes that delete or change are aimed at objects nothing else in this test needs.
    ids.source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue, enabled) VALUES ('spare.dlq', false) RETURNING id::text`)).rows[0].id
    ids.user = (await createTestUser(db, 'matrix-spare', [{ role: 'viewer' }])).userId
    ids.token = (await db.sql.query<{ id: string }>(`SELECT t.id::text FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = 'matrix-spare@lazarus.test'`)).rows[0].id
  })
  afterAll(async () => db?.drop())

  it('finds the routes', () => {
    expect(routes.length).toBeGreaterThan(40)
  })

  it('every route method is in the table, declares a permission, and the table names no route that is gone', () => {
    const found: string[] = []
    for (const route of routes) {
      for (const method of methodsOf(modules.get(route)!)) {
        const key = `${method} ${route}`
        found.push(key)
        const handler = modules.get(route)![method] as { permission?: Permission }
        expect(handler.permission, `${key} declares no permission: wrap it in route({ permission }, …)`).toBeDefined()
        expect(EXPECTED[key], `${key} is not in this test's table`).toBeDefined()
        expect(handler.permission, key).toBe(EXPECTED[key])
      }
    }
    expect(found.sort()).toEqual(Object.keys(EXPECTED).sort())
  })

  const paramsFor = (route: string): Record<string, string> => {
    if (!route.includes('[id]')) return {}
    const kind = route.split('/')[2]
    const id = { messages: ids.message, groups: ids.group, sources: ids.source, users: ids.user, tokens: ids.token }[kind] ?? '999999'
    return { id }
  }

  for (const caller of CALLERS) {
    it(`as ${caller}`, async () => {
      const failures: string[] = []
      for (const key of Object.keys(EXPECTED).sort()) {
        const [method, route] = key.split(' ')
        const permission = EXPECTED[key]
        const headers: Record<string, string> = { 'content-type': 'application/json', origin: 'http://lazarus.test' }
        if (caller !== 'anonymous') headers.authorization = auth[caller]!
        const request = new Request(`http://lazarus.test${route.replace('[id]', paramsFor(route).id ?? '')}`, {
          method,
          headers,
          body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
        })
        const response = await callRoute(modules.get(route)!, method as 'GET', request, paramsFor(route), { anonymous: true })
        const allowed = HOLDERS[permission].includes(caller)
        if (allowed && (response.status === 401 || response.status === 403)) {
          const body = await response.text()
          // Refusals for another reason than the role (e.g. a token may not create tokens) say so.
          if (!/tokens cannot create|lazarus.test does not hold/.test(body)) failures.push(`${key}: ${caller} holds ${permission} but got ${response.status} ${body}`)
        }
        if (!allowed && response.status !== (caller === 'anonymous' ? 401 : 403)) {
          failures.push(`${key}: ${caller} lacks ${permission} but got ${response.status}`)
        }
        if (!response.bodyUsed) await response.body?.cancel()
      }
      expect(failures).toEqual([])
    })
  }

  it('the provisioning token (LAZARUS_ADMIN_TOKEN) is an admin', async () => {
    const response = await callRoute(modules.get('/api/users')!, 'GET', new Request('http://lazarus.test/api/users', { headers: ADMIN_AUTH }))
    expect(response.status).toBe(200)
  })
})
