import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as replays from '@/app/api/replays/route'
import * as replayRoute from '@/app/api/replays/[id]/route'
import * as approve from '@/app/api/replays/[id]/approve/route'
import * as reject from '@/app/api/replays/[id]/reject/route'
import * as cancel from '@/app/api/replays/[id]/cancel/route'
import * as arrived from '@/app/api/replays/[id]/arrived/route'
import * as approvalSettings from '@/app/api/settings/replay-approval/route'
import * as sourceRoute from '@/app/api/sources/[id]/route'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getConfig } from '@/lib/server/platform/config'
import { createSession } from '@/lib/server/auth/sessions'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { ADMIN_AUTH, createTestUser, type TestUser } from '../helpers/auth'
import { brokerConnection, uniqueName } from '../helpers/broker'
import { bulkRows, collect, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

const base = 'http://lazarus.test'
const ctx = (id?: string) => ({ params: Promise.resolve(id ? { id } : {}) })

/**
 * Four eyes and scheduling (docs/security.md#four-eyes, docs/ARCHITECTURE.md#job-lifecycle), against the real broker
 * and database: a replay the admin's policy flags waits for a second person, holds only its items (nothing marked,
 * nothing paused) until it starts, and re-checks its plan at start.
 */
describe('replay approvals and scheduling', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let executor: ReplayExecutor | null = null
  const queue = uniqueName('approve_work')
  const dlq = uniqueName('approve_dlq')
  let sourceId: string
  let ids: string[]
  let operatorToken: TestUser
  // Browser sessions: approving is a person's act, and tokens are refused.
  const session: Record<'ann' | 'bob' | 'billing', { cookie: string; email: string }> = {} as never

  const headersOf = (who: 'ann' | 'bob' | 'billing' | 'token' | 'admin'): Record<string, string> => {
    if (who === 'token') return { authorization: operatorToken.authorization }
    if (who === 'admin') return { authorization: ADMIN_AUTH.authorization }
    return { cookie: `lazarus_session=${session[who].cookie}`, origin: base }
  }
  const send = (path: string, body: unknown, who: Parameters<typeof headersOf>[0], method = 'POST') =>
    new Request(base + path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headersOf(who) } })
  const get = (path: string, who: Parameters<typeof headersOf>[0]) => new Request(base + path, { headers: headersOf(who) })

  const create = async (body: Record<string, unknown>, who: Parameters<typeof headersOf>[0] = 'ann') => {
    const response = await replays.POST(send('/api/replays', { target: { type: 'queue' }, pauseEntities: true, ...body }, who), ctx())
    return { status: response.status, body: await response.json() }
  }
  const decide = async (verb: 'approve' | 'reject', id: string, who: Parameters<typeof headersOf>[0], comment = 'looked at it') => {
    const route = verb === 'approve' ? approve : reject
    const response = await route.POST(send(`/api/replays/${id}/${verb}`, { comment }, who), ctx(id))
    return { status: response.status, body: await response.json() }
  }
  const setPolicy = async (policy: Record<string, unknown>) => {
    const response = await approvalSettings.PUT(send('/api/settings/replay-approval', { aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null, ...policy }, 'admin', 'PUT'), ctx())
    expect(response.status).toBe(200)
    return response.json()
  }
  const statusesOf = async (messageIds: string[]) =>
    (await db.sql.query<{ status: string }>(`SELECT coalesce(st.status, 'dead') AS status FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.id = ANY($1::bigint[]) ORDER BY d.id`, [messageIds])).rows.map((r) => r.status)
  const pausesOf = async (jobId: string) => (await db.sql.query('SELECT 1 FROM pauses WHERE replay_job_id = $1::bigint', [jobId])).rows.length
  const depth = async () => (await channel.checkQueue(queue)).messageCount

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertQueue(queue, { durable: false })
    sourceId = await storeBulk(db.sql, dlq, bulkRows(20, { originExchange: '', originKey: queue, originQueue: queue, entity: (n) => `order-${n}` }))
    await storeBulk(db.sql, uniqueName('billing.other'), bulkRows(1, { originExchange: '', originKey: queue, originQueue: queue, start: 100 }))
    ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE source_id = $1::bigint ORDER BY id', [sourceId])).rows.map((r) => r.id)
    const limits = { idleMinutes: getConfig().LAZARUS_SESSION_IDLE_MINUTES, maxHours: getConfig().LAZARUS_SESSION_MAX_HOURS }
    for (const [name, binding] of [['ann', { role: 'operator' as const }], ['bob', { role: 'operator' as const }], ['billing', { role: 'operator' as const, sourcePattern: 'billing.*' }]] as const) {
      const user = await createTestUser(db, `${name}-approvals`, [binding])
      const { secret } = await createSession({ sql: db.sql, userId: user.userId, method: 'local', limits, ip: null, userAgent: null })
      session[name] = { cookie: secret, email: user.email }
    }
    operatorToken = await createTestUser(db, 'tok-approvals', [{ role: 'operator' }])
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await channel?.deleteQueue(queue).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('is off by default; the admin turns rules on; a critical source is marked by an admin', async () => {
    const read = await approvalSettings.GET(get('/api/settings/replay-approval', 'ann'), ctx())
    expect(await read.json()).toMatchObject({ aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null, effectiveTtlSeconds: 24 * 3600 })
    const { body } = await create({ selection: { ids: ids.slice(0, 5) }, dryRun: true })
    expect(body.plan.approval).toEqual({ required: false, reasons: [] })
    expect(body.plan.editedMessages).toBe(0)
    expect((await approvalSettings.PUT(send('/api/settings/replay-approval', { aboveMessages: 1, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null }, 'ann', 'PUT'), ctx())).status).toBe(403)

    await setPolicy({ aboveMessages: 3, criticalSources: true })
    const big = await create({ selection: { ids: ids.slice(0, 4) }, dryRun: true })
    expect(big.body.plan.approval).toEqual({ required: true, reasons: ['it publishes 4 messages, more than 3'] })
    expect((await create({ selection: { ids: ids.slice(0, 3) }, dryRun: true })).body.plan.approval.required).toBe(false)

    expect((await sourceRoute.PATCH(send(`/api/sources/${sourceId}`, { critical: true }, 'ann', 'PATCH'), ctx(sourceId))).status).toBe(403)
    const marked = await sourceRoute.PATCH(send(`/api/sources/${sourceId}`, { critical: true }, 'admin', 'PATCH'), ctx(sourceId))
    expect(await marked.json()).toMatchObject({ critical: true })
    const critical = await create({ selection: { ids: ids.slice(0, 1) }, dryRun: true })
    expect(critical.body.plan.approval).toEqual({ required: true, reasons: [`it replays messages of critical source ${dlq}`] })
    await sourceRoute.PATCH(send(`/api/sources/${sourceId}`, { critical: false }, 'admin', 'PATCH'), ctx(sourceId))
  })

  it('a job needing approval holds only its items; the requester and a token cannot approve, nor a user of other sources; a second operator can, and it runs', async () => {
    const created = await create({ selection: { ids: ids.slice(0, 4) } })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('awaiting_approval')
    const id = created.body.id
    // Nothing marked, nothing paused, nothing published.
    expect(await statusesOf(ids.slice(0, 4))).toEqual(['dead', 'dead', 'dead', 'dead'])
    expect(await pausesOf(id)).toBe(0)
    const detail = await (await replayRoute.GET(get(`/api/replays/${id}`, 'bob'), ctx(id))).json()
    expect(detail).toMatchObject({ status: 'awaiting_approval', total: 4, approvalReasons: ['it publishes 4 messages, more than 3'], createdBy: session.ann.email })
    expect(Date.parse(detail.approvalExpiresAt) - Date.parse(detail.createdAt)).toBeGreaterThan(23 * 3600 * 1000)

    const self = await decide('approve', id, 'ann')
    expect(self.status).toBe(403)
    expect(self.body.error.message).toBe(`You requested replay ${id}: a second operator must approve it (four eyes)`)
    const token = await decide('approve', id, 'token')
    expect(token.status).toBe(403)
    expect(token.body.error.message).toMatch(/An API token cannot approve a replay/)
    expect((await decide('approve', id, 'billing')).status).toBe(404)
    const noComment = await approve.POST(send(`/api/replays/${id}/approve`, { comment: '  ' }, 'bob'), ctx(id))
    expect(noComment.status).toBe(400)

    const approved = await decide('approve', id, 'bob', 'checked the fix is deployed')
    expect(approved.status).toBe(200)
    expect(approved.body).toMatchObject({ approvedBy: session.bob.email, decisionComment: 'checked the fix is deployed' })
    const done = await waitForJob(db.sql, id)
    expect(done).toMatchObject({ status: 'completed', confirmed: 4 })
    expect(await collect(connection, queue, 4)).toHaveLength(4)
    expect(await statusesOf(ids.slice(0, 4))).toEqual(['replayed', 'replayed', 'replayed', 'replayed'])
    const audit = await db.sql.query<{ action: string; actor: string; details: Record<string, unknown> }>(`SELECT action, actor, details FROM audit_log WHERE subject_type = 'replay' AND subject_id = $1 ORDER BY id`, [id])
    expect(audit.rows.map((r) => r.action)).toEqual(['replay.approval-requested', 'replay.approved', 'replay.started', 'replay.finished'])
    expect(audit.rows[1]).toMatchObject({ actor: session.bob.email, details: { comment: 'checked the fix is deployed', requestedBy: session.ann.email } })
    expect((await decide('approve', id, 'bob')).status).toBe(409)
  })

  it('a rejected job publishes nothing and its messages stay dead; the comment is audited', async () => {
    const { body } = await create({ selection: { ids: ids.slice(4, 8) } })
    expect(body.status).toBe('awaiting_approval')
    expect((await decide('reject', body.id, 'ann')).body.error.message).toMatch(/cancel it instead/)
    const rejected = await decide('reject', body.id, 'bob', 'wrong target')
    expect(rejected.body).toMatchObject({ status: 'rejected', rejectedBy: session.bob.email, decisionComment: 'wrong target', cancelled: 4 })
    expect(await statusesOf(ids.slice(4, 8))).toEqual(['dead', 'dead', 'dead', 'dead'])
    expect(await depth()).toBe(0)
    const audit = await db.sql.query<{ details: { comment: string } }>(`SELECT details FROM audit_log WHERE action = 'replay.rejected' AND subject_id = $1`, [body.id])
    expect(audit.rows[0].details.comment).toBe('wrong target')
  })

  it('a pending approval expires after the TTL', async () => {
    await setPolicy({ aboveMessages: 3, ttlSeconds: 1 })
    const { body } = await create({ selection: { ids: ids.slice(4, 8) } })
    const expired = await waitForJob(db.sql, body.id, ['expired'])
    expect(expired).toMatchObject({ status: 'expired', cancelled: 4, published: 0 })
    expect(await statusesOf(ids.slice(4, 8))).toEqual(['dead', 'dead', 'dead', 'dead'])
    expect((await decide('approve', body.id, 'bob')).status).toBe(409)
    const audit = await db.sql.query(`SELECT 1 FROM audit_log WHERE action = 'replay.expired' AND subject_id = $1`, [body.id])
    expect(audit.rows).toHaveLength(1)
    await setPolicy({ aboveMessages: 3 })
  })

  it('drift: a job whose messages were mostly replayed meanwhile goes back to awaiting approval instead of starting', async () => {
    const { body } = await create({ selection: { ids: ids.slice(8, 12) } })
    // Three of the four are resolved before approval: more than 20 % gone.
    await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, status_changed_at, status_changed_by, failed_at)
      SELECT id, 'resolved', now(), 'tests', failed_at FROM dead_letters WHERE id = ANY($1::bigint[])`, [ids.slice(8, 11)])
    await decide('approve', body.id, 'bob')
    const held = await waitForJob(db.sql, body.id, ['awaiting_approval'])
    expect(held.published).toBe(0)
    const detail = await (await replayRoute.GET(get(`/api/replays/${body.id}`, 'bob'), ctx(body.id))).json()
    expect(detail.approvalReasons).toEqual(['plan changed since approval: 3 of the 4 messages were replayed, resolved or taken by another job meanwhile'])
    expect(detail.plan.replayable).toBe(1)
    expect(await statusesOf(ids.slice(11, 12))).toEqual(['dead'])
    expect(await pausesOf(body.id)).toBe(0)
    // Approved again, for the plan as it now is: it starts, skipping the resolved ones with the reason.
    await decide('approve', body.id, 'bob', 'one left, fine')
    const done = await waitForJob(db.sql, body.id)
    expect(done).toMatchObject({ status: 'completed', confirmed: 1, skipped: 3 })
    const items = await db.sql.query<{ status: string; error: string | null }>('SELECT status, error FROM replay_items WHERE job_id = $1::bigint ORDER BY seq', [body.id])
    expect(items.rows.filter((r) => r.status === 'skipped').map((r) => r.error)).toEqual(['resolved meanwhile', 'resolved meanwhile', 'resolved meanwhile'])
    await collect(connection, queue, 1)
  })

  it('schedule: a job 5 s ahead is scheduled, starts then and not before; a cancelled one publishes nothing and paused nothing', async () => {
    await setPolicy({})
    const startAt = new Date(Date.now() + 5_000).toISOString()
    const { status, body } = await create({ selection: { ids: ids.slice(12, 15) }, startAt })
    expect(status).toBe(201)
    expect(body.status).toBe('scheduled')
    const before = await (await replayRoute.GET(get(`/api/replays/${body.id}`, 'ann'), ctx(body.id))).json()
    expect(before).toMatchObject({ status: 'scheduled', startAt, startedAt: null })
    expect(await statusesOf(ids.slice(12, 15))).toEqual(['dead', 'dead', 'dead'])
    expect(await depth()).toBe(0)
    expect(await pausesOf(body.id)).toBe(0)
    await waitForJob(db.sql, body.id, ['completed'], 30_000)
    const { rows } = await db.sql.query<{ started_at: Date }>('SELECT started_at FROM replay_jobs WHERE id = $1::bigint', [body.id])
    expect(rows[0].started_at.getTime()).toBeGreaterThanOrEqual(Date.parse(startAt))
    expect(await collect(connection, queue, 3)).toHaveLength(3)

    const later = await create({ selection: { ids: ids.slice(15, 18) }, startAt: new Date(Date.now() + 60_000).toISOString() })
    const cancelled = await cancel.POST(send(`/api/replays/${later.body.id}/cancel`, {}, 'ann'), ctx(later.body.id))
    expect(await cancelled.json()).toMatchObject({ status: 'cancelled', cancelled: 3, published: 0 })
    expect(await statusesOf(ids.slice(15, 18))).toEqual(['dead', 'dead', 'dead'])
    expect(await pausesOf(later.body.id)).toBe(0)
    expect(await depth()).toBe(0)

    expect((await create({ selection: { ids: ids.slice(15, 18) }, startAt: new Date(Date.now() - 1000).toISOString() })).status).toBe(400)
    expect((await create({ selection: { ids: ids.slice(15, 18) }, startAt: new Date(Date.now() + 40 * 86_400_000).toISOString() })).status).toBe(400)
    expect((await create({ selection: { ids: ids.slice(15, 18) }, startAt: 'tomorrow' })).status).toBe(400)
  })

  it('counts the messages of the same group that arrived after the job was planned, and replays exactly those', async () => {
    const group = (await db.sql.query<{ group_id: string }>('SELECT group_id::text FROM dead_letters WHERE id = $1::bigint', [ids[18]])).rows[0].group_id
    const { body } = await create({ selection: { groupId: group }, dryRun: false, confirmCount: undefined })
    expect(body.status).toBe('pending')
    await waitForJob(db.sql, body.id)
    await collect(connection, queue, body.plan.replayable)
    const none = await (await arrived.GET(get(`/api/replays/${body.id}/arrived`, 'ann'), ctx(body.id))).json()
    expect(none.count).toBe(0)
    await storeBulk(db.sql, dlq, bulkRows(2, { originExchange: '', originKey: queue, originQueue: queue, start: 500 }))
    const two = await (await arrived.GET(get(`/api/replays/${body.id}/arrived`, 'ann'), ctx(body.id))).json()
    expect(two.count).toBe(2)
    expect(two.selection).toMatchObject({ groupId: group, arrivedAfter: expect.any(String) })
    const plan = await create({ selection: two.selection, dryRun: true })
    expect(plan.body.plan.replayable).toBe(2)
  })
})
