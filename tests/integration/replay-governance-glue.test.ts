import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as replays from '@/app/api/replays/route'
import * as replayRoute from '@/app/api/replays/[id]/route'
import * as editsRoute from '@/app/api/replays/[id]/edits/route'
import * as reject from '@/app/api/replays/[id]/reject/route'
import * as approvalSettings from '@/app/api/settings/replay-approval/route'
import * as sourceRoute from '@/app/api/sources/[id]/route'
import { createSession } from '@/lib/server/auth/sessions'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { createRevision } from '@/lib/server/messages/create-revision'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getTypedHeaders } from '@/lib/server/platform/broker/typed-fields'
import { getConfig } from '@/lib/server/platform/config'
import type { ReplayEditsDto, ReplayJobDetailDto } from '@/lib/shared/schemas/replay'
import { ADMIN_AUTH, createTestUser, type TestUser } from '../helpers/auth'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { collect, deadLetterThrough, declareWorkTopology, insertOrderSource, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

const base = 'http://lazarus.test'
const ctx = (id?: string) => ({ params: Promise.resolve(id ? { id } : {}) })

/*
 * The glue between issue 18's parts (docs/ARCHITECTURE.md#job-lifecycle), on the real broker and database: the plan's
 * edited-message count feeds the approval policy; a waiting job freezes each item's revision and its stages when it is
 * created; "only the newest per entity" resolves the older versions when a waiting job starts, not before; the job
 * page's edits API shows the frozen diffs to operators.
 */
describe('replay governance glue: approvals, revisions, versions and stages of waiting jobs', () => {
  let db: TestDb
  let app: ChannelModel
  let drainer: Drainer
  let executor: ReplayExecutor
  let sourceId: string
  let viewer: TestUser
  const names = { exchange: uniqueName('glue_x'), key: 'order.changed', work: uniqueName('glue_work'), dlq: uniqueName('glue_dlq') }
  /** Dead letter ids by order id (the versioned entity A by "A@version"). */
  const ids: Record<string, string> = {}
  const session: Record<'ann' | 'bob', { cookie: string; email: string }> = {} as never

  const headersOf = (who: 'ann' | 'bob' | 'admin' | 'viewer'): Record<string, string> => {
    if (who === 'admin') return { authorization: ADMIN_AUTH.authorization }
    if (who === 'viewer') return { authorization: viewer.authorization }
    return { cookie: `lazarus_session=${session[who].cookie}`, origin: base }
  }
  const send = (path: string, body: unknown, who: Parameters<typeof headersOf>[0], method = 'POST') =>
    new Request(base + path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headersOf(who) } })
  const get = (path: string, who: Parameters<typeof headersOf>[0]) => new Request(base + path, { headers: headersOf(who) })
  const create = async (body: Record<string, unknown>) => {
    const response = await replays.POST(send('/api/replays', { target: { type: 'queue' }, pauseEntities: false, ...body }, 'ann'), ctx())
    return { status: response.status, body: await response.json() }
  }
  const setPolicy = async (policy: Record<string, unknown>) => {
    const response = await approvalSettings.PUT(send('/api/settings/replay-approval', { aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false, ttlSeconds: null, ...policy }, 'admin', 'PUT'), ctx())
    expect(response.status).toBe(200)
  }
  const edit = (id: string, body: unknown, actor: string) => createRevision({ db, id, actor, maxBodyBytes: 1024 * 1024, input: { body: { kind: 'json', text: JSON.stringify(body) } } })
  const job = async (id: string, who: Parameters<typeof headersOf>[0] = 'bob') => (await (await replayRoute.GET(get(`/api/replays/${id}`, who), ctx(id))).json()) as ReplayJobDetailDto
  const edits = (id: string, who: Parameters<typeof headersOf>[0]) => editsRoute.GET(get(`/api/replays/${id}/edits`, who), ctx(id))
  const statuses = async (messageIds: string[]) =>
    (await db.sql.query<{ status: string; reason: string | null }>(
      `SELECT st.status, st.status_reason AS reason FROM unnest($1::bigint[]) WITH ORDINALITY AS x(id, n) JOIN message_statuses st ON st.dead_letter_id = x.id ORDER BY x.n`,
      [messageIds],
    )).rows
  const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString()
  const order = (orderId: string, extra: Record<string, unknown> = {}) => ({ body: Buffer.from(JSON.stringify({ orderId, ...extra })), options: { contentType: 'application/json', messageId: orderId } })

  beforeAll(async () => {
    db = await createTestDb()
    app = await brokerConnection()
    const setup = await app.createChannel()
    await declareWorkTopology(setup, names)
    await setup.close()
    // The source with both rules before the drainer starts: the order's id is the entity, its `version` the version.
    sourceId = await insertOrderSource(db.sql, names.dlq)
    drainer = (await drainQueues(db, [names.dlq])).drainer
    const messages = [
      ...['E1', 'E2', 'E3'].map((o) => order(o, { amount: 'forty-two' })),
      ...[3, 1, 2].map((v) => ({ ...order('A', { version: v }), options: { contentType: 'application/json', messageId: `A@${v}` } })),
      ...Array.from({ length: 12 }, (_, n) => order(`S${n + 1}`)),
    ]
    await deadLetterThrough(app, { ...names, messages })
    const stored = await waitFor(async () => {
      const { rows } = await db.sql.query<{ id: string; message_id: string }>(`SELECT id::text, properties->>'messageId' AS message_id FROM dead_letters ORDER BY id`)
      return rows.length === messages.length && rows
    }, { what: `${messages.length} dead letters stored` })
    for (const r of stored) ids[r.message_id] = r.id

    const limits = { idleMinutes: getConfig().LAZARUS_SESSION_IDLE_MINUTES, maxHours: getConfig().LAZARUS_SESSION_MAX_HOURS }
    for (const name of ['ann', 'bob'] as const) {
      const user = await createTestUser(db, `${name}-glue`, [{ role: 'operator' }])
      const { secret } = await createSession({ sql: db.sql, userId: user.userId, method: 'local', limits, ip: null, userAgent: null })
      session[name] = { cookie: secret, email: user.email }
    }
    viewer = await createTestUser(db, 'viewer-glue', [{ role: 'viewer' }])
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    if (app) {
      const ch = await app.createChannel()
      for (const q of [names.work, names.dlq]) await ch.deleteQueue(q).catch(() => {})
      await ch.deleteExchange(names.exchange).catch(() => {})
      await app.close().catch(() => {})
    }
    await db?.drop()
  })

  it('with the "edited messages" rule on, a selection holding an edited message needs approval; without edits it does not; the edits API shows the frozen diff to operators only', async () => {
    await setPolicy({ editedMessages: true })
    await edit(ids.E1, { orderId: 'E1', amount: 42 }, session.ann.email)

    const plain = await create({ selection: { ids: [ids.E2, ids.E3] }, dryRun: true })
    expect(plain.body.plan).toMatchObject({ editedMessages: 0, approval: { required: false, reasons: [] } })
    const edited = await create({ selection: { ids: [ids.E1, ids.E2] }, dryRun: true })
    expect(edited.body.plan).toMatchObject({ editedMessages: 1, approval: { required: true, reasons: ['it sends 1 edited message'] } })

    const created = await create({ selection: { ids: [ids.E1, ids.E2] } })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('awaiting_approval')
    const id = created.body.id as string
    expect((await job(id)).approvalReasons).toEqual(['it sends 1 edited message'])
    expect(await statuses([ids.E1, ids.E2])).toEqual([{ status: 'dead', reason: null }, { status: 'dead', reason: null }])

    // An edit after the request is not what the approver approves: the API keeps showing revision 1.
    await edit(ids.E1, { orderId: 'E1', amount: 43 }, session.bob.email)
    const response = await edits(id, 'bob')
    expect(response.status).toBe(200)
    const body = (await response.json()) as ReplayEditsDto
    expect(body).toMatchObject({ total: 1, limit: 20 })
    expect(body.edits).toHaveLength(1)
    expect(body.edits[0]).toMatchObject({ messageId: ids.E1, itemId: '1', revision: 1, editedBy: session.ann.email, summary: 'body +1 −1 lines' })
    expect(body.edits[0].diff.body).toMatchObject({ kind: 'text', added: 1, removed: 1 })
    const patch = (body.edits[0].diff.body as { patch: string }).patch
    expect(patch).toContain('-{"orderId":"E1","amount":"forty-two"}')
    expect(patch).toContain('+{"orderId":"E1","amount":42}')
    expect(patch).not.toContain('43')
    expect(body.edits[0].diff.headers).toEqual([])

    // Viewers may read the job but not raw bodies; a job that is not there, or an id that is none, is a 404.
    expect((await replayRoute.GET(get(`/api/replays/${id}`, 'viewer'), ctx(id))).status).toBe(200)
    const refused = await edits(id, 'viewer')
    expect(refused.status).toBe(403)
    expect((await edits('999999', 'bob')).status).toBe(404)
    expect((await edits('abc', 'bob')).status).toBe(404)

    const rejected = await reject.POST(send(`/api/replays/${id}/reject`, { comment: 'not this way' }, 'bob'), ctx(id))
    expect(rejected.status).toBe(200)
    await setPolicy({})
    // A job without edited messages has none to show.
    const none = await create({ selection: { ids: [ids.E3] }, startAt: inSeconds(3600) })
    expect(none.status).toBe(201)
    expect(await (await edits(none.body.id, 'bob')).json()).toEqual({ total: 0, limit: 20, edits: [] })
    await db.sql.query(`UPDATE replay_jobs SET status = 'cancelled', finished_at = now() WHERE id = $1::bigint`, [none.body.id])
  })

  it('a scheduled job publishes the revision it froze at creation, not an edit made before it started, once per message', async () => {
    // E2 edited twice before the job: it freezes revision 2; a third edit while it waits is not sent.
    await edit(ids.E2, { orderId: 'E2', amount: 1 }, session.ann.email)
    await edit(ids.E2, { orderId: 'E2', amount: 2 }, session.ann.email)
    const created = await create({ selection: { ids: [ids.E2, ids.E3] }, startAt: inSeconds(3) })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('scheduled')
    const id = created.body.id as string
    await edit(ids.E2, { orderId: 'E2', amount: 3 }, session.bob.email)
    expect(await statuses([ids.E2, ids.E3])).toEqual([{ status: 'dead', reason: null }, { status: 'dead', reason: null }])

    // The frozen revision's diff is against the original (both edits), not against revision 1.
    const frozen = (await (await edits(id, 'bob')).json()) as ReplayEditsDto
    expect(frozen.edits.map((e) => [e.messageId, e.revision])).toEqual([[ids.E2, 2]])
    const patch = (frozen.edits[0].diff.body as { patch: string }).patch
    expect(patch).toContain('-{"orderId":"E2","amount":"forty-two"}')
    expect(patch).toContain('+{"orderId":"E2","amount":2}')

    expect(await waitForJob(db.sql, id)).toMatchObject({ status: 'completed', total: 2, confirmed: 2 })
    expect(await queueDepth(names.work)).toBe(2)
    const received = await collect(app, names.work, 2, 5_000)
    const byOrder = new Map(received.map((m) => [JSON.parse(m.content.toString()).orderId as string, m]))
    expect([...byOrder.keys()].sort()).toEqual(['E2', 'E3'])
    expect(JSON.parse(byOrder.get('E2')!.content.toString())).toEqual({ orderId: 'E2', amount: 2 })
    expect(getTypedHeaders(byOrder.get('E2')!.properties.headers)?.['x-lazarus-revision']).toEqual({ t: 'l', v: '2' })
    expect(JSON.parse(byOrder.get('E3')!.content.toString())).toEqual({ orderId: 'E3', amount: 'forty-two' })
    expect(getTypedHeaders(byOrder.get('E3')!.properties.headers)?.['x-lazarus-revision']).toBeUndefined()
    expect(await queueDepth(names.work)).toBe(0)
    const { rows } = await db.sql.query<{ revision: number | null }>(`SELECT revision FROM replay_items WHERE job_id = $1::bigint ORDER BY seq`, [id])
    expect(rows.map((r) => r.revision)).toEqual([2, null])
  })

  it('a waiting job with "only the newest per entity" resolves the older versions when it starts, not before; a rejected one resolves nothing', async () => {
    const versions = [ids['A@3'], ids['A@1'], ids['A@2']]
    const selection = { ids: versions }
    const dead = [{ status: 'dead', reason: null }, { status: 'dead', reason: null }, { status: 'dead', reason: null }]
    const supersededAudits = async () => (await db.sql.query(`SELECT 1 FROM audit_log WHERE action = 'messages.superseded'`)).rows.length

    // Rejected: nothing resolved, ever.
    await setPolicy({ criticalSources: true })
    expect((await sourceRoute.PATCH(send(`/api/sources/${sourceId}`, { critical: true }, 'admin', 'PATCH'), ctx(sourceId))).status).toBe(200)
    const asked = await create({ selection, onlyNewestPerEntity: true })
    expect(asked.body).toMatchObject({ status: 'awaiting_approval', plan: { replayable: 1 } })
    expect(await statuses(versions)).toEqual(dead)
    const rejected = await reject.POST(send(`/api/replays/${asked.body.id}/reject`, { comment: 'no' }, 'bob'), ctx(asked.body.id))
    expect(rejected.status).toBe(200)
    expect(await statuses(versions)).toEqual(dead)
    expect(await supersededAudits()).toBe(0)
    await sourceRoute.PATCH(send(`/api/sources/${sourceId}`, { critical: false }, 'admin', 'PATCH'), ctx(sourceId))
    await setPolicy({})

    // Scheduled: the older versions stay dead until the start, then are resolved as superseded by version 3.
    const created = await create({ selection, onlyNewestPerEntity: true, startAt: inSeconds(3) })
    expect(created.body).toMatchObject({ status: 'scheduled', plan: { replayable: 1 } })
    const id = created.body.id as string
    const { rows: [stored] } = await db.sql.query<{ superseded_ids: string[] }>(`SELECT superseded_ids::text[] FROM replay_jobs WHERE id = $1::bigint`, [id])
    expect([...stored.superseded_ids].sort()).toEqual([ids['A@1'], ids['A@2']].sort())
    expect(await statuses(versions)).toEqual(dead)
    expect(await supersededAudits()).toBe(0)

    expect(await waitForJob(db.sql, id)).toMatchObject({ status: 'completed', total: 1, confirmed: 1 })
    expect(await statuses(versions)).toEqual([
      { status: 'replayed', reason: null },
      { status: 'resolved', reason: 'superseded by version 3' },
      { status: 'resolved', reason: 'superseded by version 3' },
    ])
    expect(await supersededAudits()).toBe(1)
    expect(await queueDepth(names.work)).toBe(1)
    const received = await collect(app, names.work, 1, 5_000)
    expect(received.map((m) => JSON.parse(m.content.toString()).version)).toEqual([3])
    expect(await queueDepth(names.work)).toBe(0)
  })

  it('a scheduled staged job keeps its stages at the start: the canary is published first', async () => {
    const sIds = Array.from({ length: 12 }, (_, n) => ids[`S${n + 1}`])
    const created = await create({ selection: { ids: sIds }, startAt: inSeconds(3), staging: { canaryCount: 2, windowSeconds: 1, rampPercents: [100] } })
    expect(created.status).toBe(201)
    expect(created.body.status).toBe('scheduled')
    const id = created.body.id as string
    const waiting = await job(id)
    expect(waiting.status).toBe('scheduled')
    expect(waiting.staging?.stages.map((s) => [s.throughSeq, s.startedAt])).toEqual([[2, null], [12, null]])

    expect(await waitForJob(db.sql, id)).toMatchObject({ status: 'completed', total: 12, confirmed: 12 })
    const done = await job(id)
    expect(done.staging).not.toBeNull()
    const [canary, ramp] = done.staging!.stages
    expect([canary.throughSeq, canary.size, ramp.throughSeq, ramp.size]).toEqual([2, 2, 12, 10])
    expect(canary.publishedAt).not.toBeNull()
    expect(Date.parse(ramp.startedAt!)).toBeGreaterThanOrEqual(Date.parse(canary.publishedAt!))
    // Every canary item went out before any item of the ramp.
    const { rows: [order] } = await db.sql.query<{ canary_last: Date; ramp_first: Date }>(
      `SELECT max(published_at) FILTER (WHERE seq <= 2) AS canary_last, min(published_at) FILTER (WHERE seq > 2) AS ramp_first FROM replay_items WHERE job_id = $1::bigint`,
      [id],
    )
    expect(order.canary_last.getTime()).toBeLessThanOrEqual(order.ramp_first.getTime())
    expect(await collect(app, names.work, 12, 5_000)).toHaveLength(12)
  })
})
