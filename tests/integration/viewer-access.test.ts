import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as messages from '@/app/api/messages/route'
import * as count from '@/app/api/messages/count/route'
import * as message from '@/app/api/messages/[id]/route'
import * as body from '@/app/api/messages/[id]/body/route'
import * as exportRoute from '@/app/api/export/route'
import * as groups from '@/app/api/groups/route'
import * as group from '@/app/api/groups/[id]/route'
import * as resolve from '@/app/api/messages/resolve/route'
import * as sourcesRoute from '@/app/api/sources/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Roles at work on real data: a viewer sees messages redacted and cannot find what redaction hides (no search, count
 * or export may match inside a masked value); an operator sees them raw and every raw view is audited; an operator
 * limited to billing.* sees and changes billing's messages only.
 */

const SECRET = 'hunter2-Zq9'
const ORIGIN = 'http://lazarus.test'

async function as(who: TestUser, module: RouteModule, method: string, path: string, options: { body?: unknown; params?: Record<string, string> } = {}) {
  const response = await callRoute(
    module,
    method as 'GET',
    new Request(ORIGIN + path, {
      method,
      headers: { authorization: who.authorization, 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }),
    options.params ?? {},
  )
  return { status: response.status, text: await response.text() }
}

describe('what each role sees', () => {
  let db: TestDb
  let viewer: TestUser, operator: TestUser, billing: TestUser, mixed: TestUser
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    db = await createTestDb()
    viewer = await createTestUser(db, 'vera', [{ role: 'viewer' }])
    operator = await createTestUser(db, 'otto', [{ role: 'operator' }])
    billing = await createTestUser(db, 'bill', [{ role: 'operator', sourcePattern: 'billing.*' }])
    mixed = await createTestUser(db, 'mia', [{ role: 'viewer' }, { role: 'operator', sourcePattern: 'billing.*' }], { role: 'viewer' })
    // Mia's token acts as viewer everywhere; give her a second one acting as the billing operator too.
    for (const queue of ['orders.dlq', 'billing.dlq']) {
      const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [queue])).rows[0].id
      const secretBody = Buffer.from(JSON.stringify({ orderId: `${queue}-1`, password: SECRET, note: 'nothing secret here' }))
      await storeBatch({
        sql: db.sql,
        sourceId: source,
        sourceLabel: queue,
        rows: [
          ingestRow({ body: secretBody, bodyPreview: secretBody.toString('utf8'), bodyEncoding: 'json', signature: 'v1:shared-group', title: 'Boom: shared', errorMessage: `login failed password=${SECRET}` }),
        ],
      })
      ids[queue] = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE source_id = $1::bigint', [source])).rows[0].id
    }
    ids.group = (await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = 'v1:shared-group'`)).rows[0].id
  })
  afterAll(async () => db?.drop())

  it('a viewer gets messages redacted, and cannot download the raw body', async () => {
    const detail = await as(viewer, message, 'GET', `/api/messages/${ids['orders.dlq']}`, { params: { id: ids['orders.dlq'] } })
    expect(detail.status).toBe(200)
    expect(detail.text).not.toContain(SECRET)
    expect(Buffer.from(JSON.parse(detail.text).body.base64, 'base64').toString('utf8')).not.toContain(SECRET)
    expect(JSON.parse(detail.text)).toMatchObject({ redacted: true })
    const list = await as(viewer, messages, 'GET', '/api/messages')
    expect(list.text).not.toContain(SECRET)
    expect((await as(viewer, body, 'GET', `/api/messages/${ids['orders.dlq']}/body`, { params: { id: ids['orders.dlq'] } })).status).toBe(403)
    const { rows } = await db.sql.query(`SELECT 1 FROM audit_log WHERE action = 'message.raw-viewed'`)
    expect(rows).toHaveLength(0)
  })

  it('the search oracle: no list, count or export of a viewer matches inside a masked value', async () => {
    for (const q of [SECRET, 'hunter', 'hunter2-Z', 'Zq9']) {
      const list = JSON.parse((await as(viewer, messages, 'GET', `/api/messages?q=${encodeURIComponent(q)}`)).text)
      expect(list.messages, q).toEqual([])
      const counted = JSON.parse((await as(viewer, count, 'GET', `/api/messages/count?q=${encodeURIComponent(q)}`)).text)
      expect(counted.count, q).toBe(0)
      const exported = await as(viewer, exportRoute, 'GET', `/api/export?format=jsonl&q=${encodeURIComponent(q)}`)
      expect(exported.status).toBe(200)
      expect(exported.text.trim(), q).toBe('')
      const csv = await as(viewer, exportRoute, 'GET', `/api/export?format=csv&q=${encodeURIComponent(q)}`)
      expect(csv.text.trim().split('\n'), q).toHaveLength(1)
    }
    // What is not masked is still found.
    const found = JSON.parse((await as(viewer, messages, 'GET', '/api/messages?q=nothing%20secret')).text)
    expect(found.messages).toHaveLength(2)
    expect(JSON.parse((await as(viewer, count, 'GET', '/api/messages/count?q=nothing%20secret')).text).count).toBe(2)
    // A Markdown ticket's counts would tell; it is refused for a text search without raw access.
    expect((await as(viewer, exportRoute, 'GET', `/api/export?format=md&q=hunter`)).status).toBe(403)
  })

  it('an operator finds and sees the raw values, and each raw view is audited', async () => {
    const list = JSON.parse((await as(operator, messages, 'GET', `/api/messages?q=${SECRET}`)).text)
    expect(list.messages).toHaveLength(2)
    const detail = await as(operator, message, 'GET', `/api/messages/${ids['orders.dlq']}`, { params: { id: ids['orders.dlq'] } })
    expect(Buffer.from(JSON.parse(detail.text).body.base64, 'base64').toString('utf8')).toContain(SECRET)
    const raw = await as(operator, body, 'GET', `/api/messages/${ids['orders.dlq']}/body`, { params: { id: ids['orders.dlq'] } })
    expect(raw.text).toContain(SECRET)
    const { rows } = await db.sql.query<{ actor: string; subject_id: string; details: { what: string } }>(
      `SELECT actor, subject_id, details FROM audit_log WHERE action = 'message.raw-viewed' ORDER BY id`,
    )
    expect(rows.map((r) => [r.actor, r.subject_id, r.details.what])).toEqual([
      [operator.actor, ids['orders.dlq'], 'detail'],
      [operator.actor, ids['orders.dlq'], 'body'],
    ])
  })

  it('viewer everywhere and operator on billing.*: raw (and findable) on billing, redacted elsewhere', async () => {
    const billingOperatorToken = await (async () => {
      const { createApiToken } = await import('@/lib/server/users/create-api-token')
      const { PROVISIONING_ADMIN } = await import('../helpers/auth')
      const { token } = await createApiToken({ db, principal: PROVISIONING_ADMIN as never, input: { name: 'ops', role: 'operator', sourcePattern: 'billing.*', guardVhost: '/', userId: mixed.userId } })
      return { ...mixed, authorization: `Bearer ${token}` }
    })()
    const found = JSON.parse((await as(billingOperatorToken, messages, 'GET', `/api/messages?q=${SECRET}`)).text)
    expect(found.messages.map((m: { id: string }) => m.id)).toEqual([ids['billing.dlq']])
    // Mia's viewer token: no raw anywhere.
    expect(JSON.parse((await as(mixed, messages, 'GET', `/api/messages?q=${SECRET}`)).text).messages).toEqual([])
  })

  it('an operator limited to billing.* sees no other source: messages, groups, counts, sources, exports', async () => {
    const list = JSON.parse((await as(billing, messages, 'GET', '/api/messages')).text)
    expect(list.messages.map((m: { id: string }) => m.id)).toEqual([ids['billing.dlq']])
    expect((await as(billing, message, 'GET', `/api/messages/${ids['orders.dlq']}`, { params: { id: ids['orders.dlq'] } })).status).toBe(404)
    const grouped = JSON.parse((await as(billing, groups, 'GET', '/api/groups')).text)
    expect(grouped.groups).toHaveLength(1)
    expect(grouped.groups[0]).toMatchObject({ count: 1, sources: ['billing.dlq'] })
    const all = JSON.parse((await as(operator, groups, 'GET', '/api/groups')).text)
    expect(all.groups[0]).toMatchObject({ count: 2 })
    const detail = JSON.parse((await as(billing, group, 'GET', `/api/groups/${ids.group}`, { params: { id: ids.group } })).text)
    expect(detail.group ?? detail).toMatchObject({ count: 1 })
    expect(JSON.parse((await as(billing, count, 'GET', '/api/messages/count')).text).count).toBe(1)
    expect(JSON.parse((await as(billing, sourcesRoute, 'GET', '/api/sources')).text).sources.map((s: { queue: string }) => s.queue)).toEqual(['billing.dlq'])
    const exported = (await as(billing, exportRoute, 'GET', '/api/export?format=jsonl')).text.trim().split('\n')
    expect(exported.map((line) => JSON.parse(line).id)).toEqual([ids['billing.dlq']])
  })

  it('an operator limited to billing.* changes billing\'s messages only: a whole-group resolve leaves orders\' alone', async () => {
    const result = JSON.parse((await as(billing, resolve, 'POST', '/api/messages/resolve', { body: { selection: { groupId: ids.group }, reason: 'billing fixed it' } })).text)
    expect(result.resolved).toBe(1)
    const { rows } = await db.sql.query<{ id: string; status: string }>('SELECT dead_letter_id::text AS id, status FROM message_statuses ORDER BY dead_letter_id')
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [ids['orders.dlq']]: 'dead', [ids['billing.dlq']]: 'resolved' })
    // The shared group itself stays open: it still has dead messages elsewhere.
    expect((await db.sql.query<{ status: string }>('SELECT status FROM error_groups WHERE id = $1::bigint', [ids.group])).rows[0].status).toBe('open')
  })
})
