import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as guardSuperseded from '@/app/api/guard/superseded/route'
import * as pausesRoute from '@/app/api/pauses/route'
import * as replayItems from '@/app/api/replays/[id]/items/route'
import * as replays from '@/app/api/replays/route'
import * as sourceRoute from '@/app/api/sources/[id]/route'
import * as messageRoute from '@/app/api/messages/[id]/route'
import { createGuard, type Guard, type SupersededEvent } from '@/packages/guard/src'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { ReplayCreatedDto, ReplayDryRunDto, ReplayItemListDto } from '@/lib/shared/schemas/replay'
import { ADMIN_AUTH, createTestUser } from '../helpers/auth'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { callRoute } from '../helpers/call-route'
import { drainQueues } from '../helpers/drainer'
import { ingestRow } from '../helpers/ingest-row'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { collect, deadLetterThrough, declareWorkTopology, insertOrderSource, startTestExecutor, waitForJob } from '../helpers/replay'
import { serveRoutes, type RouteServer } from '../helpers/route-server'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { closeComposition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()
const base = 'http://lazarus.test'
const json = (method: string, path: string, body: unknown) =>
  new Request(base + path, { method, headers: { ...ADMIN_AUTH, 'content-type': 'application/json' }, body: JSON.stringify(body) })

/**
 * "Old must not overwrite new" (issue 18; docs/ARCHITECTURE.md#entity-versions), on the real broker and database:
 * versions read at ingest, the plan's view of them, "only the newest per entity", and a guard that drops a replayed
 * copy older than what it processed and tells Lazarus through POST /api/guard/superseded.
 */
describe('entity versions', () => {
  let db: TestDb
  let app: ChannelModel
  let drainer: Drainer
  let executor: ReplayExecutor
  let guard: Guard | undefined
  let lazarus: RouteServer
  let lazarusUrl: string
  const names = { exchange: uniqueName('ver_x'), key: 'order.updated', work: uniqueName('ver_work'), dlq: uniqueName('ver_dlq') }
  let sourceId: string

  const order = (orderId: string, version: unknown, step = '') => ({ body: Buffer.from(JSON.stringify({ orderId, version, step })), options: { contentType: 'application/json' } })
  const deadRows = (entity: string) =>
    db.sql.query<{ id: string; entity_version: number | null; flags: string[]; status: string; status_reason: string | null }>(
      `SELECT d.id::text, d.entity_version, d.flags, st.status, st.status_reason FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id
       WHERE d.entity_key = $1 ORDER BY d.id`,
      [entity],
    )

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    app = await brokerConnection()
    const setup = await app.createChannel()
    await declareWorkTopology(setup, names)
    await setup.close()
    // The source with both rules before the drainer starts: the order's id is the entity, its `version` the version.
    sourceId = await insertOrderSource(db.sql, names.dlq)
    drainer = (await drainQueues(db, [names.dlq])).drainer
    executor = startTestExecutor(db)
    // Lazarus' HTTP API as the guard reaches it: the real route modules, behind a loopback server.
    lazarus = await serveRoutes({ '/api/pauses': pausesRoute, '/api/guard/superseded': guardSuperseded })
    lazarusUrl = lazarus.url
  })

  afterAll(async () => {
    await guard?.close().catch(() => {})
    await executor?.stop()
    await drainer?.stop()
    await lazarus?.close()
    if (app) {
      const ch = await app.createChannel()
      for (const q of [names.work, names.dlq]) await ch.deleteQueue(q).catch(() => {})
      await ch.deleteExchange(names.exchange).catch(() => {})
      await app.close().catch(() => {})
    }
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  it('a bad version rule is refused with 400, a good one is stored and returned', async () => {
    const patch = (entityVersion: unknown) => callRoute(sourceRoute, 'PATCH', json('PATCH', `/api/sources/${sourceId}`, { entityVersion }), { id: sourceId })
    for (const bad of [{ kind: 'header', name: 'v' }, { kind: 'header', name: 'v', type: 'date' }, { kind: 'jsonPointer', pointer: 'version', type: 'number' }, { kind: 'property', name: 'body', type: 'number' }]) {
      const response = await patch(bad)
      expect(response.status, JSON.stringify(bad)).toBe(400)
    }
    const good = await patch({ kind: 'jsonPointer', pointer: '/version', type: 'number' })
    expect(good.status).toBe(200)
    expect((await good.json()).entityVersion).toEqual({ kind: 'jsonPointer', pointer: '/version', type: 'number' })
  })

  it('replays versions 3, 1 and 2 of one entity with "only the newest": version 3 alone is published, the others are resolved as superseded', async () => {
    await deadLetterThrough(app, { ...names, messages: [order('A', 3), order('A', 1), order('A', '2'), order('B', 'not-a-version')] })
    const stored = await waitFor(async () => {
      const { rows } = await deadRows('A')
      return rows.length === 3 && rows
    }, { what: "A's three dead letters" })
    expect(stored.map((r) => r.entity_version)).toEqual([3, 1, 2])
    const b = await waitFor(async () => (await deadRows('B')).rows[0], { what: "B's dead letter" })
    expect(b.entity_version).toBeNull()
    expect(b.flags).toContain('entity-version-unparsable')

    const selection = { ids: [...stored.map((r) => r.id), b.id] }
    const plan = async (onlyNewestPerEntity: boolean) => {
      const response = await callRoute(replays, 'POST', json('POST', '/api/replays', { selection, target: { type: 'queue' }, dryRun: true, onlyNewestPerEntity }))
      expect(response.status).toBe(200)
      return ((await response.json()) as ReplayDryRunDto).plan
    }
    const all = await plan(false)
    expect(all.replayable).toBe(4)
    expect(all.versions).toMatchObject({ type: 'number', messages: 4, withoutVersion: 1, unparsable: 1, entities: 2, entitiesWithSeveral: 1, older: 2 })
    expect(all.versions?.sample).toEqual([{ sourceId, entityKey: 'A', versions: [1, 2, 3], newest: 3, newerStored: 0, newestStored: null }])
    expect(all.warnings.some((w) => w.includes('only the newest per entity'))).toBe(true)
    const newest = await plan(true)
    expect(newest.replayable).toBe(2)
    expect(newest.excluded).toContainEqual({ reason: 'superseded', count: 2, sampleIds: [stored[1].id, stored[2].id].sort() })

    const created = await callRoute(replays, 'POST', json('POST', '/api/replays', { selection: { ids: stored.map((r) => r.id) }, target: { type: 'queue' }, onlyNewestPerEntity: true }))
    expect(created.status).toBe(201)
    const job = (await created.json()) as ReplayCreatedDto
    expect(job.plan.replayable).toBe(1)
    // Resolved in the transaction that created the job, before anything was published.
    const after = (await deadRows('A')).rows
    expect(after.map((r) => [r.entity_version, r.status, r.status_reason])).toEqual([
      [3, 'replaying', null],
      [1, 'resolved', 'superseded by version 3'],
      [2, 'resolved', 'superseded by version 3'],
    ])
    const finished = await waitForJob(db.sql, job.id)
    expect(finished).toMatchObject({ status: 'completed', total: 1, confirmed: 1 })
    // Everything the job published is in the work queue now (confirmed): exactly one message, version 3.
    expect(await queueDepth(names.work)).toBe(1)
    const received = await collect(app, names.work, 1, 5_000)
    expect(received.map((m) => JSON.parse(m.content.toString()).version)).toEqual([3])
    expect(await queueDepth(names.work)).toBe(0)
    const { rows: audit } = await db.sql.query<{ summary: string }>(`SELECT summary FROM audit_log WHERE action = 'messages.superseded'`)
    expect(audit).toHaveLength(1)
    expect(audit[0].summary).toContain(`Resolved 2 older versions as superseded by replay ${job.id}`)
  })

  it('the plan says when a newer version of an entity is among the stored dead letters', async () => {
    const rows = [7, 5].map((v) => ingestRow({ entityKey: 'C', entityVersion: v, originQueue: names.work, originExchange: names.exchange, originRoutingKeys: [names.key] }))
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: names.dlq, rows })
    const { rows: c } = await db.sql.query<{ id: string; entity_version: number }>(`SELECT id::text, entity_version FROM dead_letters WHERE entity_key = 'C' ORDER BY entity_version`)
    const response = await callRoute(replays, 'POST', json('POST', '/api/replays', { selection: { ids: [c[0].id] }, target: { type: 'queue' }, dryRun: true }))
    const { plan } = (await response.json()) as ReplayDryRunDto
    expect(plan.versions).toMatchObject({ entities: 1, entitiesWithSeveral: 0, entitiesWithNewerStored: 1 })
    expect(plan.versions?.sample).toEqual([{ sourceId, entityKey: 'C', versions: [5], newest: 5, newerStored: 1, newestStored: 7 }])
    expect(plan.warnings.some((w) => w.includes('newer version among the stored dead letters'))).toBe(true)
  })

  it('a guard that processed version 5 drops a replayed version 4 (acked, never handed to the application) and the job shows it', async () => {
    await deadLetterThrough(app, { ...names, messages: [order('D', 4, 'old')] })
    const [dead] = await waitFor(async () => {
      const { rows } = await deadRows('D')
      return rows.length === 1 && rows
    }, { what: "D's dead letter" })
    expect(dead.entity_version).toBe(4)

    const token = await createTestUser(db, 'versions-guard', [{ role: 'operator' }], { scope: 'guard', guardQueue: names.work })
    const handled: { orderId: string; version: number; step: string }[] = []
    const dropped: SupersededEvent[] = []
    const errors: string[] = []
    const channel = await app.createChannel()
    guard = createGuard({
      ...topology.guardOptions, connection: app, queue: names.work, lazarusUrl, token: token.token.trim(), retryDelayMs: 100,
      versions: { rule: { kind: 'jsonPointer', pointer: '/version', type: 'number' }, entityKey: { kind: 'jsonPointer', pointer: '/orderId' }, maxEntities: 100, windowMinutes: 10 },
      onSuperseded: (e) => dropped.push(e),
      onError: (e) => errors.push(e.message),
    })
    await guard.consume(channel, (message) => {
      if (!message) return
      handled.push(JSON.parse(message.content.toString()))
      channel.ack(message)
    })
    // The application processes version 5 of D (ordinary traffic).
    const publisher = await app.createConfirmChannel()
    publisher.publish(names.exchange, names.key, order('D', 5, 'live').body)
    await publisher.waitForConfirms()
    await waitFor(async () => handled.length === 1, { what: 'version 5 handled' })

    // The operator replays D's old version 4.
    const created = await callRoute(replays, 'POST', json('POST', '/api/replays', { selection: { ids: [dead.id] }, target: { type: 'queue' } }))
    const job = (await created.json()) as ReplayCreatedDto
    await waitForJob(db.sql, job.id)
    const items = await waitFor(async () => {
      const response = await callRoute(replayItems, 'GET', new Request(`${base}/api/replays/${job.id}/items`, { headers: ADMIN_AUTH }), { id: job.id })
      const body = (await response.json()) as ReplayItemListDto
      return body.items[0]?.supersededByVersion !== null && body.items
    }, { what: 'the item to show superseded' })
    expect(items).toHaveLength(1)
    expect(items[0]).toMatchObject({ status: 'confirmed', supersededByVersion: 5 })
    expect(items[0].supersededNote).toBe('superseded by version 5')
    expect(dropped).toMatchObject([{ entityKey: 'D', version: 4, supersededBy: 5, replayId: items[0].replayId }])

    // Ordinary traffic is never dropped, even older: version 2 of D reaches the handler.
    publisher.publish(names.exchange, names.key, order('D', 2, 'live-older').body)
    await publisher.waitForConfirms()
    await publisher.close()
    await waitFor(async () => handled.length === 2, { what: 'the ordinary older message handled' })
    expect(handled.map((h) => [h.version, h.step])).toEqual([[5, 'live'], [2, 'live-older']])
    // The replayed copy was acked: closing the channel returns nothing to the queue.
    await guard.close()
    guard = undefined
    await channel.close()
    expect(await queueDepth(names.work)).toBe(0)
    // (No pause runtime runs here, so the guard's control-event subscription complains; the report never did.)
    expect(errors.filter((e) => /superseded/.test(e))).toEqual([])

    // The message's replay history says so too, and the audit log.
    const detail = await callRoute(messageRoute, 'GET', new Request(`${base}/api/messages/${dead.id}`, { headers: ADMIN_AUTH }), { id: dead.id })
    const message = await detail.json()
    expect(message.replays).toMatchObject([{ jobId: job.id, supersededByVersion: 5 }])
    const { rows: audit } = await db.sql.query<{ actor: string }>(`SELECT actor FROM audit_log WHERE action = 'replay.item-superseded'`)
    expect(audit).toHaveLength(1)
  })

  it('a report is refused unless it comes from a guard token for that queue', async () => {
    const report = { queue: names.work, vhost: '/', instance: 'x', replayId: 'nope', entityKey: 'D', version: 1, supersededBy: 2 }
    const asAdmin = await callRoute(guardSuperseded, 'POST', json('POST', '/api/guard/superseded', report))
    expect(asAdmin.status).toBe(403)
    const other = await createTestUser(db, 'versions-other-guard', [{ role: 'operator' }], { scope: 'guard', guardQueue: 'other.work' })
    const wrongQueue = await callRoute(
      guardSuperseded, 'POST',
      new Request(`${base}/api/guard/superseded`, { method: 'POST', headers: { authorization: other.authorization, 'content-type': 'application/json' }, body: JSON.stringify(report) }),
      {}, { anonymous: true },
    )
    expect(wrongQueue.status).toBe(403)
    const backwards = await callRoute(guardSuperseded, 'POST', json('POST', '/api/guard/superseded', { ...report, version: 3 }))
    expect(backwards.status).toBe(400)
  })
})
