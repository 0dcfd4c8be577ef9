import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH, createTestUser, type TestUser } from '../helpers/auth'
import * as replays from '@/app/api/replays/route'
import * as confirmSettings from '@/app/api/settings/replay-confirm/route'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { brokerConnection, uniqueName } from '../helpers/broker'
import { bulkRows, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

const base = 'http://lazarus.test'
const ctx = { params: Promise.resolve({}) }
const send = (method: string, path: string, body: unknown, authorization: string) =>
  new Request(base + path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization } })

/**
 * Large replays need their count confirmed: from the admin's threshold (Settings, default 100) a job starts only when
 * the request's confirmCount equals the messages it will publish. The UI asks for the number to be typed; an API
 * token sends the number from its dry run. A count that is sent must match, for any replay.
 */
describe('confirming the count of a large replay', () => {
  let db: TestDb
  let connection: ChannelModel
  let operator: TestUser
  const queue = uniqueName('confirm_work')
  let ids: string[]

  const replay = (body: Record<string, unknown>) => replays.POST(send('POST', '/api/replays', { target: { type: 'queue' }, pauseEntities: false, ...body }, operator.authorization), ctx)

  beforeAll(async () => {
    db = await createTestDb()
    operator = await createTestUser(db, 'olga', [{ role: 'operator' }])
    connection = await brokerConnection()
    await (await connection.createChannel()).assertQueue(queue, { durable: false })
    await storeBulk(db.sql, uniqueName('confirm_dlq'), bulkRows(8, { originExchange: '', originKey: queue, originQueue: queue }))
    ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters ORDER BY id')).rows.map((r) => r.id)
  })

  afterAll(async () => {
    await (await connection?.createChannel())?.deleteQueue(queue).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('reads the default of 100, and lets only admins change it, audited', async () => {
    const read = await confirmSettings.GET(new Request(base + '/api/settings/replay-confirm', { headers: { authorization: operator.authorization } }), ctx)
    expect(await read.json()).toEqual({ largeJobMessages: 100, stagedFromMessages: 1000, updatedAt: null, updatedBy: null })
    expect((await confirmSettings.PUT(send('PUT', '/api/settings/replay-confirm', { largeJobMessages: 3 }, operator.authorization), ctx)).status).toBe(403)
    expect((await confirmSettings.PUT(send('PUT', '/api/settings/replay-confirm', { largeJobMessages: 0 }, ADMIN_AUTH.authorization), ctx)).status).toBe(400)
    expect((await confirmSettings.PUT(send('PUT', '/api/settings/replay-confirm', { largeJobMessages: 2.5 }, ADMIN_AUTH.authorization), ctx)).status).toBe(400)
    const saved = await confirmSettings.PUT(send('PUT', '/api/settings/replay-confirm', { largeJobMessages: 3 }, ADMIN_AUTH.authorization), ctx)
    expect(saved.status).toBe(200)
    expect(await saved.json()).toMatchObject({ largeJobMessages: 3, updatedBy: expect.any(String) })
    const { rows } = await db.sql.query<{ details: { before: unknown; after: unknown } }>(`SELECT details FROM audit_log WHERE action = 'settings.updated' AND subject_id = 'replay-confirm'`)
    expect(rows.map((r) => r.details)).toEqual([{ before: { largeJobMessages: 100, stagedFromMessages: 1000 }, after: { largeJobMessages: 3, stagedFromMessages: 1000 } }])
  })

  it('asks for the count from the threshold on, and refuses a missing or different one with the number to send', async () => {
    const small = await (await replay({ selection: { ids: ids.slice(0, 2) }, dryRun: true })).json()
    expect(small.plan).toMatchObject({ replayable: 2, confirmCount: null, largeJobMessages: 3, canRun: true })
    const large = await (await replay({ selection: { ids: ids.slice(0, 5) }, dryRun: true })).json()
    expect(large.plan).toMatchObject({ replayable: 5, confirmCount: 5, largeJobMessages: 3 })

    const missing = await replay({ selection: { ids: ids.slice(0, 5) } })
    expect(missing.status).toBe(422)
    const refused = await missing.json()
    expect(refused.error.message).toBe('This replay publishes 5 messages (large replays start at 3): send confirmCount 5 to confirm the count')
    expect(refused.error.details.confirmCount).toEqual({ required: 5, given: null })

    const wrong = await replay({ selection: { ids: ids.slice(0, 5) }, confirmCount: 50 })
    expect(wrong.status).toBe(422)
    expect((await wrong.json()).error.message).toMatch(/^confirmCount 50 does not match the 5 messages this replay would publish/)
    // A small replay needs no count, but one that is sent must still be right.
    expect((await replay({ selection: { ids: ids.slice(0, 2) }, confirmCount: 1 })).status).toBe(422)
    const { rows } = await db.sql.query('SELECT 1 FROM replay_jobs')
    expect(rows).toHaveLength(0)
  })

  it('starts a large replay whose count is confirmed, as an API token does after its dry run', async () => {
    const { plan } = await (await replay({ selection: { ids: ids.slice(0, 5) }, dryRun: true })).json()
    const created = await replay({ selection: { ids: ids.slice(0, 5) }, confirmCount: plan.confirmCount })
    expect(created.status).toBe(201)
    expect(await created.json()).toMatchObject({ status: 'pending', plan: { replayable: 5 } })
    expect((await replay({ selection: { ids: ids.slice(5, 7) } })).status).toBe(201)
  })
})
