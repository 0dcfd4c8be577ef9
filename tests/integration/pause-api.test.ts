import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH, createTestUser, tokenActor, type TestUser } from '../helpers/auth'
import { createHash } from 'node:crypto'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { brokerConnection, waitFor } from '../helpers/broker'
import * as pausesRoute from '@/app/api/pauses/route'
import * as pauseRoute from '@/app/api/pauses/[id]/route'
import * as sourcesRoute from '@/app/api/sources/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { createPause } from '@/lib/server/pauses/create-pause'
import { createPauseSchema } from '@/lib/shared/schemas/pause'
import { createJobPauses } from '@/lib/server/pauses/job-pauses'
import { appendReleaseItems, resumeJobPauses } from '@/lib/server/engines/release/job-releases'
import { registerHoldSource } from '@/lib/server/engines/release/release-store'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { countingDb, countingSql } from '../helpers/counting-sql'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

const base = 'http://lazarus.test'
const get = (path: string) => new Request(base + path, { headers: ADMIN_AUTH })
const users: Record<string, TestUser> = {}
const send = (method: string, path: string, body?: unknown, user = 'ann') =>
  new Request(base + path, {
    method,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: user === 'admin' ? ADMIN_AUTH.authorization : users[user].authorization },
  })
const ctx = <P>(params: P) => ({ params: Promise.resolve(params) })

function row(overrides: Partial<IngestRow> = {}): IngestRow {
  const body = overrides.body ?? Buffer.from(JSON.stringify({ orderId: 'order-1' }))
  return {
    fingerprint: createHash('sha256').update(body).update(String(Math.random())).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8'),
    propertiesJson: '{}', headersJson: '{}', deliveryExchange: '', deliveryRoutingKey: 'orders.dlq',
    deathReason: 'rejected', attempts: 1, originExchange: 'orders', originRoutingKeys: ['order.created'], originQueue: 'orders.work',
    firstDeathAt: new Date('2026-11-01T10:00:00Z'), lastDeathAt: new Date('2026-11-01T10:00:00Z'), failedAt: new Date('2026-11-01T10:00:00Z'),
    errorType: 'StockException', errorMessage: 'out of stock', errorStack: null, failureKind: 'exhausted',
    service: 'orders', serviceVersion: '1.0.0', framework: 'lazarus', entityKey: 'order-1',
    signature: 'v1:pauseapi000000001', title: 'StockException: out of stock', messagePattern: 'out of stock',
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    ...overrides,
  }
}

/** A held message as the drainer stores it from lazarus.hold, arriving now (asHeldRow sets failedAt to the arrival). */
const held = (entityKey: string, n: number, heldFrom = 'orders.work'): IngestRow =>
  row({ status: 'held', heldFrom, entityKey, failedAt: new Date(), body: Buffer.from(JSON.stringify({ orderId: entityKey, n })), signature: 'lazarus:held', title: 'Held while paused' })

describe('pause registry API', () => {
  let db: TestDb
  let sourceId: string
  let bareSourceId: string
  let holdSourceId: string
  let connection: ChannelModel
  const events: { type: string; version: number; pause: { id: string; entityKey: string | null; status: string } }[] = []
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    for (const name of ['ann', 'bob']) users[name] = await createTestUser(db, name, [{ role: 'operator' }])
    users.vera = await createTestUser(db, 'vera', [{ role: 'viewer' }])
    users.gus = await createTestUser(db, 'gus', [{ role: 'operator' }], { scope: 'guard', guardQueue: 'bare.work' })
    const created = await sourcesRoute.POST(send('POST', '/api/sources', { queue: 'orders.dlq', entityKey: { kind: 'jsonPointer', pointer: '/orderId' }, orderSensitive: true, confirmNotWorkQueue: true }, 'admin'), ctx({}))
    sourceId = (await created.json()).id
    // A source whose dead letters do not say which queue they failed in. (Neither DLQ exists on the broker: the admin
    // confirms them as dead-letter queues.)
    bareSourceId = (await (await sourcesRoute.POST(send('POST', '/api/sources', { queue: 'bare.dlq', confirmNotWorkQueue: true }, 'admin'), ctx({}))).json()).id
    holdSourceId = await registerHoldSource({ sql: db.sql, vhost: '/', queue: topology.hold })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: [row(), row({ entityKey: 'order-2' })] })
    await storeBatch({ sql: db.sql, sourceId: bareSourceId, sourceLabel: 'bare.dlq', rows: [row({ originQueue: null, signature: 'v1:pauseapi000000002' })] })

    // Every pause and resume is announced on lazarus.control; listen like a guard does.
    connection = await brokerConnection()
    const channel: Channel = await connection.createChannel()
    await channel.assertExchange(topology.control, 'topic', { durable: true })
    const { queue } = await channel.assertQueue('', { exclusive: true })
    await channel.bindQueue(queue, topology.control, '#')
    await channel.consume(queue, (m) => m && events.push(JSON.parse(m.content.toString())), { noAck: true })
  })

  afterAll(async () => {
    await connection?.close().catch(() => {})
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  type Case = { name: string; call: () => Promise<Response>; status: number; check?: (body: any) => void | Promise<void>; save?: string }
  const cases: Case[] = [
    { name: 'empty registry', call: () => pausesRoute.GET(get('/api/pauses'), ctx({})), status: 200, check: (b) => expect(b).toEqual({ version: 0, pauses: [], guards: [] }) },
    {
      name: 'pause an entity: queue defaults to where the dead letters failed, rule copied from the source',
      call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'order-1', reason: 'fixing stock sync' }), ctx({})),
      status: 201,
      save: 'entity',
      check: (b) =>
        expect(b).toMatchObject({
          sourceId, vhost: '/', queue: 'orders.work', entityKey: 'order-1', entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' },
          status: 'active', reason: 'fixing stock sync', createdBy: tokenActor('ann'), held: 0, version: 1, replayJobId: null, resumedAt: null,
        }),
    },
    { name: 'the same entity again is a conflict', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'order-1', reason: 'again' }), ctx({})), status: 409 },
    {
      name: 'pause the whole queue (entityKey null)',
      call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: null, reason: 'deploy' }), ctx({})),
      status: 201,
      save: 'whole',
      check: (b) => expect(b).toMatchObject({ entityKey: null, entityKeyRule: null, version: 2 }),
    },
    {
      // No dead letter of bare.dlq names a queue: only an admin (allowAnyQueue) may name one (pause-queue-scope.test.ts).
      name: 'an admin pauses an explicit queue; a source without a rule makes guards read x-entity-key',
      call: async () =>
        Response.json(await createPause({ db, control: composition().control, input: createPauseSchema.parse({ sourceId: bareSourceId, queue: 'bare.work', entityKey: 'k-1', reason: 'r' }), actor: 'ann', allowAnyQueue: true }), { status: 201 }),
      status: 201,
      save: 'bare',
      check: (b) => expect(b).toMatchObject({ queue: 'bare.work', entityKeyRule: { kind: 'header', name: 'x-entity-key' }, version: 3 }),
    },
    { name: 'no queue named and none known', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId: bareSourceId, entityKey: 'k-2', reason: 'r' }), ctx({})), status: 422 },
    { name: 'the hold queue cannot be paused', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId: holdSourceId, queue: 'x', entityKey: 'k', reason: 'r' }), ctx({})), status: 422 },
    { name: 'unknown source', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId: '999999', entityKey: 'k', reason: 'r' }), ctx({})), status: 404 },
    { name: 'missing reason', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'order-9' }), ctx({})), status: 400 },
    { name: 'blank reason', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'order-9', reason: '   ' }), ctx({})), status: 400 },
    { name: 'entityKey must be given (null for the whole queue)', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, reason: 'r' }), ctx({})), status: 400 },
    { name: 'non-numeric source id', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId: 'abc', entityKey: 'k', reason: 'r' }), ctx({})), status: 400 },
    { name: 'unknown field', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'k', reason: 'r', force: true }), ctx({})), status: 400 },
    { name: 'malformed JSON', call: () => pausesRoute.POST(send('POST', '/api/pauses', '{"sourceId":'), ctx({})), status: 400 },
    { name: 'oversized entity key', call: () => pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey: 'k'.repeat(1025), reason: 'r' }), ctx({})), status: 400 },
    {
      name: 'the list carries the registry version and the open pauses',
      call: () => pausesRoute.GET(get('/api/pauses'), ctx({})),
      status: 200,
      check: (b) => {
        expect(b.version).toBe(3)
        expect(b.pauses.map((p: any) => p.entityKey).sort()).toEqual([null, 'k-1', 'order-1'].sort())
      },
    },
    { name: 'bad status filter', call: () => pausesRoute.GET(get('/api/pauses?status=paused'), ctx({})), status: 400 },
    { name: 'unknown query parameter', call: () => pausesRoute.GET(get('/api/pauses?queue=x&bogus=1'), ctx({})), status: 400 },
    {
      name: "a guard's poll lists its own queue's pauses only",
      call: () => pausesRoute.GET(get('/api/pauses?queue=bare.work&vhost=%2F&instance=host-1-0a1b2c3d&guardVersion=2.0.0'), ctx({})),
      status: 200,
      check: (b) => expect(b.pauses.map((p: any) => [p.queue, p.entityKey])).toEqual([['bare.work', 'k-1']]),
    },
    {
      name: "only a guard token's poll is a heartbeat: a person naming an instance cannot make a queue look protected",
      call: async () => {
        const as = (user: string) => new Request(`${base}/api/pauses?queue=bare.work&vhost=%2F&instance=spoofed-${user}-1&guardVersion=2.1.0&registryVersion=3`, { headers: { authorization: users[user].authorization } })
        for (const user of ['vera', 'ann']) expect((await pausesRoute.GET(as(user), ctx({}))).status).toBe(200)
        return pausesRoute.GET(
          new Request(`${base}/api/pauses?queue=other.work&vhost=%2F&instance=real-guard-1&guardVersion=2.1.0&registryVersion=3`, { headers: { authorization: users.gus.authorization } }),
          ctx({}),
        )
      },
      status: 200,
      check: async (b) => {
        // The guard token reads its own queue whatever it names, and its poll is recorded there.
        expect(b.pauses.map((p: any) => [p.queue, p.entityKey])).toEqual([['bare.work', 'k-1']])
        const { rows } = await db.sql.query<{ queue: string; instance: string; registry_version: string }>(
          `SELECT queue, instance, registry_version::text FROM guard_heartbeats WHERE instance LIKE 'spoofed-%' OR instance = 'real-guard-1' ORDER BY instance`,
        )
        expect(rows).toEqual([{ queue: 'bare.work', instance: 'real-guard-1', registry_version: '3' }])
        const listed = await (await pausesRoute.GET(get('/api/pauses'), ctx({}))).json()
        expect(listed.guards).toContainEqual({ vhost: '/', queue: 'bare.work', listening: 1, upToDate: 1 })
      },
    },
    { name: 'resume an unknown pause', call: () => pauseRoute.DELETE(send('DELETE', '/api/pauses/424242'), ctx({ id: '424242' })), status: 404 },
    { name: 'resume a non-numeric id', call: () => pauseRoute.DELETE(send('DELETE', '/api/pauses/abc'), ctx({ id: 'abc' })), status: 404 },
    {
      name: 'resume with nothing held: resumed at once, at the next version',
      call: () => pauseRoute.DELETE(send('DELETE', '/api/pauses/x', undefined, 'bob'), ctx({ id: ids.whole })),
      status: 200,
      check: (b) => expect(b).toMatchObject({ id: ids.whole, status: 'resumed', resumedBy: tokenActor('bob'), version: 4, held: 0 }),
    },
    { name: 'resume twice is a conflict', call: () => pauseRoute.DELETE(send('DELETE', '/api/pauses/x'), ctx({ id: ids.whole })), status: 409 },
    {
      name: 'resumed pauses leave the default list but stay in status=all',
      call: () => pausesRoute.GET(get('/api/pauses?status=all'), ctx({})),
      status: 200,
      check: async (b) => {
        expect(b.version).toBe(4)
        expect(b.pauses.find((p: any) => p.id === ids.whole)).toMatchObject({ status: 'resumed' })
        const active = await (await pausesRoute.GET(get('/api/pauses'), ctx({}))).json()
        expect(active.pauses.map((p: any) => p.id)).not.toContain(ids.whole)
      },
    },
  ]

  for (const c of cases) {
    it(c.name, async () => {
      const response = await c.call()
      const body = await response.json()
      expect(response.status, JSON.stringify(body)).toBe(c.status)
      if (c.status >= 400) expect(body.error.message).toEqual(expect.any(String))
      if (c.save) ids[c.save] = body.id
      await c.check?.(body)
    })
  }

  it('announced every pause and resume on lazarus.control, with its version', async () => {
    await waitFor(async () => events.length >= 4, { what: 'four control events' })
    expect(events.map((e) => [e.type, e.version, e.pause.entityKey])).toEqual([
      ['pause', 1, 'order-1'],
      ['pause', 2, null],
      ['pause', 3, 'k-1'],
      ['resume', 4, null],
    ])
    expect(events[3].pause).toMatchObject({ id: ids.whole, status: 'resumed' })
  })

  it('audits pauses and resumes with who did them', async () => {
    const { rows } = await db.sql.query<{ actor: string; action: string; subject_id: string }>(`SELECT actor, action, subject_id FROM audit_log WHERE subject_type = 'pause' ORDER BY id`)
    expect(rows).toEqual([
      { actor: tokenActor('ann'), action: 'pause.created', subject_id: ids.entity },
      { actor: tokenActor('ann'), action: 'pause.created', subject_id: ids.whole },
      { actor: 'ann', action: 'pause.created', subject_id: ids.bare },
      { actor: tokenActor('bob'), action: 'pause.resumed', subject_id: ids.whole },
    ])
  })

  it('resuming a pause with held messages releases them in arrival order first', async () => {
    const holdRows = [held('order-1', 1), held('order-2', 1), held('order-1', 2), held('order-1', 3, 'other.work')]
    for (const r of holdRows) await storeBatch({ sql: db.sql, sourceId: holdSourceId, sourceLabel: topology.hold, rows: [r] })
    const listed = await (await pausesRoute.GET(get('/api/pauses'), ctx({}))).json()
    expect(listed.pauses.find((p: any) => p.id === ids.entity).held).toBe(2)

    const response = await pauseRoute.DELETE(send('DELETE', '/api/pauses/x'), ctx({ id: ids.entity }))
    const body = await response.json()
    expect(response.status).toBe(200)
    // Guards keep holding until the release job has sent the backlog back; the executor then resumes it.
    expect(body).toMatchObject({ status: 'releasing', held: 0, version: 1 })
    expect(body.replayJobId).toEqual(expect.any(String))

    const { rows: job } = await db.sql.query<{ kind: string; status: string; total: number }>('SELECT kind, status, total FROM replay_jobs WHERE id = $1::bigint', [body.replayJobId])
    expect(job[0]).toEqual({ kind: 'release', status: 'pending', total: 2 })
    const { rows: items } = await db.sql.query<{ seq: number; kind: string; exchange: string; routing_key: string; n: number; status: string }>(
      `SELECT i.seq, i.kind, i.exchange, i.routing_key, (convert_from(d.body, 'UTF8')::jsonb->>'n')::int AS n, st.status
       FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id JOIN message_statuses st ON st.dead_letter_id = d.id WHERE i.job_id = $1::bigint ORDER BY i.seq`,
      [body.replayJobId],
    )
    expect(items).toEqual([
      { seq: 1, kind: 'release', exchange: '', routing_key: 'orders.work', n: 1, status: 'replaying' },
      { seq: 2, kind: 'release', exchange: '', routing_key: 'orders.work', n: 2, status: 'replaying' },
    ])
    expect((await pauseRoute.DELETE(send('DELETE', '/api/pauses/x'), ctx({ id: ids.entity }))).status).toBe(409)

    // The executor's last step: nothing more held, then resume at the next version with its event.
    expect(await db.sql.transaction((tx) => appendReleaseItems({ sql: tx, jobId: body.replayJobId }))).toBe(0)
    await resumeJobPauses({ db, control: composition().control, jobId: body.replayJobId, actor: 'ann' })
    const after = await (await pausesRoute.GET(get('/api/pauses?status=all'), ctx({}))).json()
    expect(after.version).toBe(5)
    expect(after.pauses.find((p: any) => p.id === ids.entity)).toMatchObject({ status: 'resumed', version: 5 })
    await waitFor(async () => events.find((e) => e.type === 'resume' && e.version === 5), { what: 'the resume event' })

    // Held rows no open pause covers are stragglers: the sweep that follows a resume sends them back in a small release
    // job of their own, if a pause explains them: order-2 arrived while the whole queue orders.work was paused. Nothing
    // ever paused other.work, so that row stays held, flagged held-unexpected (anyone may write x-lazarus-held-from).
    const { rows: stragglers } = await db.sql.query<{ kind: string; created_by: string; routing_key: string; entity_key: string }>(
      `SELECT j.kind, j.created_by, i.routing_key, d.entity_key FROM replay_jobs j JOIN replay_items i ON i.job_id = j.id
       JOIN dead_letters d ON d.id = i.dead_letter_id WHERE j.id > $1::bigint ORDER BY i.seq`,
      [body.replayJobId],
    )
    expect(stragglers).toEqual([{ kind: 'release', created_by: 'lazarus', routing_key: 'orders.work', entity_key: 'order-2' }])
    const { rows: unexpected } = await db.sql.query<{ status: string; flags: string[] }>(
      `SELECT st.status, d.flags FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id WHERE d.held_from = 'other.work'`,
    )
    expect(unexpected).toEqual([{ status: 'held', flags: ['held-unexpected'] }])
  })

  it("a replay job's pauses: release items follow its replay items, in arrival order, then resume", async () => {
    const { rows: job } = await db.sql.query<{ id: string }>(
      `INSERT INTO replay_jobs (kind, selection, target, rate_per_second, plan, created_by, total) VALUES ('replay', '{}', '{"type":"source"}', 100, '{}', 'carol', 1) RETURNING id::text`,
    )
    const jobId = job[0].id
    const { rows: dead } = await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE source_id = $1::bigint AND entity_key = 'order-2'`, [sourceId])
    await db.sql.query(`INSERT INTO replay_items (job_id, seq, dead_letter_id, replay_id) VALUES ($1::bigint, 1, $2::bigint, 'r-1')`, [jobId, dead[0].id])

    const pauses = await db.sql.transaction((tx) =>
      createJobPauses({
        tx, jobId, actor: 'carol',
        pairs: [
          { sourceId, vhost: '/', queue: 'orders.work', entityKey: 'order-2', entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' } },
          { sourceId, vhost: '/', queue: 'orders.work', entityKey: 'order-2', entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' } },
          // Already paused by an operator (pause "bare"): left to that pause.
          { sourceId: bareSourceId, vhost: '/', queue: 'bare.work', entityKey: 'k-1', entityKeyRule: null },
        ],
      }),
    )
    expect(pauses.map((p) => [p.entityKey, p.replayJobId, p.version])).toEqual([['order-2', jobId, 6]])

    // A second job may not pause an entity the first one still holds.
    const { rows: other } = await db.sql.query<{ id: string }>(`INSERT INTO replay_jobs (selection, target, rate_per_second, plan, created_by) VALUES ('{}', '{}', 1, '{}', 'x') RETURNING id::text`)
    await expect(
      db.sql.transaction((tx) => createJobPauses({ tx, jobId: other[0].id, actor: 'x', pairs: [{ sourceId, vhost: '/', queue: 'orders.work', entityKey: 'order-2', entityKeyRule: null }] })),
    ).rejects.toMatchObject({ code: 'conflict' })

    // Messages held while the job ran; one for another queue is not the job's.
    for (const r of [held('order-2', 2), held('order-2', 3), held('order-2', 4, 'other.work')]) await storeBatch({ sql: db.sql, sourceId: holdSourceId, sourceLabel: topology.hold, rows: [r] })
    const added = await db.sql.transaction((tx) => appendReleaseItems({ sql: tx, jobId }))
    expect(added).toBe(2)
    const { rows: items } = await db.sql.query<{ seq: number; kind: string; n: number | null; routing_key: string | null }>(
      `SELECT i.seq, i.kind, (convert_from(d.body, 'UTF8')::jsonb->>'n')::int AS n, i.routing_key
       FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE i.job_id = $1::bigint ORDER BY i.seq`,
      [jobId],
    )
    expect(items).toEqual([
      { seq: 1, kind: 'replay', n: null, routing_key: null },
      { seq: 2, kind: 'release', n: 2, routing_key: 'orders.work' },
      { seq: 3, kind: 'release', n: 3, routing_key: 'orders.work' },
    ])
    const { rows: total } = await db.sql.query<{ total: number }>('SELECT total FROM replay_jobs WHERE id = $1::bigint', [jobId])
    expect(total[0].total).toBe(3)

    await resumeJobPauses({ db, control: composition().control, jobId, actor: 'carol' })
    const list = await (await pausesRoute.GET(get('/api/pauses?status=all'), ctx({}))).json()
    expect(list.pauses.find((p: any) => p.id === pauses[0].id)).toMatchObject({ status: 'resumed', version: 7, resumedBy: 'carol' })
    expect(list.version).toBe(7)
  })

  it("pauses and resumes a replay's thousand entities in a few statements, each at its own version", async () => {
    const { rows: job } = await db.sql.query<{ id: string }>(`INSERT INTO replay_jobs (selection, target, rate_per_second, plan, created_by) VALUES ('{}', '{}', 1, '{}', 'dave') RETURNING id::text`)
    const pairs = Array.from({ length: 1000 }, (_, i) => ({ sourceId, vhost: '/', queue: 'bulk.work', entityKey: `bulk-${i}`, entityKeyRule: { kind: 'jsonPointer', pointer: '/orderId' } }))
    // "A few statements" is a count, whatever the machine's speed: none of them per entity.
    const counter = { statements: 0 }
    const pauses = await countingSql(db.sql, counter).transaction((tx) => createJobPauses({ tx, jobId: job[0].id, actor: 'dave', pairs }))
    const toPause = counter.statements
    expect(pauses).toHaveLength(1000)
    const versions = pauses.map((p) => p.version).sort((a, b) => a - b)
    expect(new Set(versions).size).toBe(1000)
    expect(versions[999] - versions[0]).toBe(999)
    counter.statements = 0
    await resumeJobPauses({ db: countingDb(db, counter), control: composition().control, jobId: job[0].id, actor: 'dave' })
    expect(toPause).toBeLessThanOrEqual(10)
    expect(counter.statements).toBeLessThanOrEqual(10)
    const { rows } = await db.sql.query<{ action: string; n: number }>(`SELECT action, count(*)::int AS n FROM audit_log WHERE actor = 'dave' GROUP BY action ORDER BY action`)
    expect(rows).toEqual([{ action: 'pause.created', n: 1000 }, { action: 'pause.resumed', n: 1000 }])
    const list = await (await pausesRoute.GET(get('/api/pauses'), ctx({}))).json()
    expect(list.pauses.some((p: any) => p.queue === 'bulk.work')).toBe(false)
    expect(list.version).toBe(versions[999] + 1000)
  })

  it('a message held under two pauses goes back only when the last of them ends', async () => {
    const create = async (entityKey: string | null) => (await pausesRoute.POST(send('POST', '/api/pauses', { sourceId, entityKey, reason: 'overlap' }), ctx({}))).json()
    const entity = await create('order-3')
    const whole = await create(null)
    expect(whole.version).toBe(entity.version + 1)
    for (const r of [held('order-3', 1), held('order-4', 2)]) await storeBatch({ sql: db.sql, sourceId: holdSourceId, sourceLabel: topology.hold, rows: [r] })

    // Resuming the whole queue sends back order-4 only: order-3 is still paused on its own.
    const wholeResumed = await (await pauseRoute.DELETE(send('DELETE', '/api/pauses/x'), ctx({ id: whole.id }))).json()
    expect(wholeResumed.status).toBe('releasing')
    const releasedOf = async (jobId: string) =>
      (await db.sql.query<{ entity_key: string }>(`SELECT d.entity_key FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id WHERE i.job_id = $1::bigint ORDER BY i.seq`, [jobId])).rows.map((r) => r.entity_key)
    expect(await releasedOf(wholeResumed.replayJobId)).toEqual(['order-4'])

    // Resuming the entity while the whole queue is still releasing: order-3 stays held for the whole-queue pause...
    const entityResumed = await (await pauseRoute.DELETE(send('DELETE', '/api/pauses/x'), ctx({ id: entity.id }))).json()
    expect(entityResumed).toMatchObject({ status: 'resumed', version: whole.version + 1 })
    // ...whose release job picks it up when its first items are done.
    expect(await db.sql.transaction((tx) => appendReleaseItems({ sql: tx, jobId: wholeResumed.replayJobId }))).toBe(1)
    expect(await releasedOf(wholeResumed.replayJobId)).toEqual(['order-4', 'order-3'])
  })
})
