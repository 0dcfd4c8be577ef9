import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as audit from '@/app/api/audit/route'
import * as health from '@/app/api/health/route'
import * as replays from '@/app/api/replays/route'
import { getConfig } from '@/lib/server/platform/config'
import { setLogLevel } from '@/lib/server/platform/log'
import { closeComposition } from '@/lib/server/platform/process/composition'
import { ADMIN_AUTH } from '../helpers/auth'
import { uniqueName } from '../helpers/broker'
import { callRoute } from '../helpers/call-route'
import { captureLogs } from '../helpers/capture-logs'
import { bulkRows, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

// Nothing listens on port 1: the management API is down for this file, so planning a replay logs a warning from inside
// the replay code (not only the route wrapper's line). Set before the configuration is read.
process.env.RABBITMQ_MANAGEMENT_URL = 'http://guest:guest@127.0.0.1:1'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const base = 'http://lazarus.test'

/** One id per API request: on its response, on every log line written while serving it, and on its audit entries. */
describe('request ids', () => {
  let db: TestDb
  let ids: string[]

  beforeAll(async () => {
    db = await createTestDb()
    await storeBulk(db.sql, uniqueName('reqid_dlq'), bulkRows(6, { originExchange: uniqueName('reqid_x'), originKey: 'k', originQueue: uniqueName('reqid_work') }))
    ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters ORDER BY id')).rows.map((r) => r.id)
    setLogLevel('debug')
  })
  afterAll(async () => {
    setLogLevel(getConfig().LAZARUS_LOG_LEVEL)
    await closeComposition()
    await db?.drop()
  })

  const createReplay = (selected: string[], headers: Record<string, string> = {}) =>
    callRoute(
      replays,
      'POST',
      new Request(`${base}/api/replays`, {
        method: 'POST',
        headers: { ...ADMIN_AUTH, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ selection: { ids: selected }, target: { type: 'queue' } }),
      }),
    )

  it("a request's log lines and its audit entry share the id its response names", async () => {
    const { result: response, entries } = await captureLogs(() => createReplay(ids.slice(0, 2)))
    expect(response.status).toBe(201)
    const requestId = response.headers.get('x-request-id')!
    expect(requestId).toMatch(UUID)
    const { id: jobId } = await response.json()

    // Every line of the request carries the id: the replay planner's warning and the route wrapper's request line.
    expect(entries.map((e) => [e.scope, e.level, e.msg])).toEqual(
      expect.arrayContaining([
        ['replay', 'warn', 'plan: management API unavailable'],
        ['api', 'debug', 'request'],
      ]),
    )
    expect(entries.map((e) => e.requestId)).toEqual(entries.map(() => requestId))
    expect(entries.find((e) => e.msg === 'request')).toMatchObject({ method: 'POST', path: '/api/replays', status: 201 })

    const { rows } = await db.sql.query<{ request_id: string | null }>(`SELECT request_id FROM audit_log WHERE action = 'replay.created' AND subject_id = $1`, [jobId])
    expect(rows).toEqual([{ request_id: requestId }])
    const listed = await callRoute(audit, 'GET', new Request(`${base}/api/audit?subjectType=replay&subjectId=${jobId}`, { headers: ADMIN_AUTH }))
    expect((await listed.json()).entries).toEqual([expect.objectContaining({ action: 'replay.created', requestId })])
  })

  it('each request gets its own id, and an X-Request-Id sent past no trusted proxy is not taken', async () => {
    const first = await createReplay(ids.slice(2, 4), { 'x-request-id': 'chosen-by-the-client' })
    const second = await createReplay(ids.slice(4, 6), { 'x-request-id': 'chosen-by-the-client' })
    expect([first.status, second.status]).toEqual([201, 201])
    const [a, b] = [first.headers.get('x-request-id'), second.headers.get('x-request-id')]
    expect(a).toMatch(UUID)
    expect(b).toMatch(UUID)
    expect(a).not.toBe(b)
    const { rows } = await db.sql.query<{ request_id: string }>(`SELECT request_id FROM audit_log WHERE action = 'replay.created' ORDER BY id DESC LIMIT 2`)
    expect(rows.map((r) => r.request_id)).toEqual([b, a])
  })

  it('answers errors with the id too', async () => {
    const refused = await callRoute(audit, 'GET', new Request(`${base}/api/audit?limit=0`, { headers: ADMIN_AUTH }))
    expect(refused.status).toBe(400)
    expect(refused.headers.get('x-request-id')).toMatch(UUID)
    const anonymous = await callRoute(audit, 'GET', new Request(`${base}/api/audit`), {}, { anonymous: true })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('x-request-id')).toMatch(UUID)
  })

  it("leaves the id off the lines of a shared broker connection that a request happened to open first", async () => {
    // The health connection belongs to the process (the composition root's): its first channel is asked for by this
    // request, but its "connected" line, and every reconnection after it, are not the request's.
    const { result: response, entries } = await captureLogs(() => callRoute(health, 'GET', new Request(`${base}/api/health`, { headers: ADMIN_AUTH })))
    expect(response.status).toBe(200)
    const requestId = response.headers.get('x-request-id')!
    const connected = entries.filter((e) => e.scope === 'broker' && e.connection === 'lazarus-health' && e.msg === 'connected to RabbitMQ')
    expect(connected).toHaveLength(1)
    expect(connected[0].requestId).toBeUndefined()
    expect(entries.find((e) => e.scope === 'api' && e.msg === 'request')?.requestId).toBe(requestId)
  })

  it('leaves entries written outside a request without one', async () => {
    const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM audit_log WHERE request_id IS NULL`)
    // The test user setup and the seed wrote nothing through a route; every entry so far came from one.
    expect(rows[0].n).toBe(0)
    const { recordAudit } = await import('@/lib/server/audit/record-audit')
    await recordAudit({ sql: db.sql, actor: 'tests', action: 'settings.updated', subject: { type: 'settings', id: null }, summary: 'outside a request' })
    const after = await db.sql.query<{ request_id: string | null }>(`SELECT request_id FROM audit_log WHERE summary = 'outside a request'`)
    expect(after.rows).toEqual([{ request_id: null }])
  })
})
