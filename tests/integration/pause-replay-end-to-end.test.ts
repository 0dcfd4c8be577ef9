import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { createGuard, type Guard, type HoldEvent } from '@/packages/guard/src'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { startPauseRuntime, type PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { servePausesApi } from '../helpers/pause-api-server'
import { deadLetterThrough, declareWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

type Order = { orderId: string; step: string; headers?: Record<string, unknown> }

/**
 * The pause test: an entity with 3 dead letters is paused; 5 new messages for it and others for other
 * entities are published; the replay runs; the consumer built on the guard (packages/guard) handled the entity's 8 messages in order
 * (the 3 old, then the 5 new) and never held another entity's message.
 */
describe('pause, hold, replay, release, resume: end to end', () => {
  let db: TestDb
  let runtime: PauseRuntime
  let drainer: Drainer
  let executor: ReplayExecutor | undefined
  let api: Awaited<ReturnType<typeof servePausesApi>>
  let app: ChannelModel
  let guard: Guard
  const names = { exchange: uniqueName('orders_x'), key: 'order.updated', work: uniqueName('orders_work'), dlq: uniqueName('orders_dlq') }
  const handled: Order[] = []
  const holds: HoldEvent[] = []
  const errors: string[] = []

  const body = (order: Order) => Buffer.from(JSON.stringify(order))
  const publish = async (orders: Order[]) => {
    const channel = await app.createConfirmChannel()
    for (const order of orders) channel.publish(names.exchange, names.key, body(order), { contentType: 'application/json', persistent: true })
    await channel.waitForConfirms()
    await channel.close()
  }

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    runtime = await startPauseRuntime({ db, control: composition().brokers.control, config: topology.config, sweepMs: 300 })
    await runtime.topologyReady
    app = await brokerConnection()
    const setup = await app.createChannel()
    await declareWorkTopology(setup, names)
    await setup.close()
    const drain = await drainQueues(db, [names.dlq], { entityKey: { kind: 'jsonPointer', pointer: '/orderId' } })
    drainer = drain.drainer
    await db.sql.query('UPDATE sources SET order_sensitive = true WHERE id = $1::bigint', [drain.sourceIds[names.dlq]])
    api = await servePausesApi({ db })
  })

  afterAll(async () => {
    await guard?.close().catch(() => {})
    await executor?.stop()
    await drainer?.stop()
    await runtime?.stop()
    await api?.close()
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

  it("replays the entity's 3 dead letters, then its 5 held messages, in order, holding nothing else", async () => {
    // 1. Three messages of order E failed in the work queue and were drained as dead letters.
    await deadLetterThrough(app, { ...names, messages: ['old-1', 'old-2', 'old-3'].map((step) => ({ body: body({ orderId: 'E', step }) })) })
    const dead = await waitFor(async () => {
      const { rows } = await db.sql.query<{ id: string; origin_queue: string }>(`SELECT id::text, origin_queue FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE entity_key = 'E' AND status = 'dead' ORDER BY id`)
      return rows.length === 3 && rows
    }, { what: 'three dead letters of E' })
    expect(dead.every((d) => d.origin_queue === names.work)).toBe(true)

    // 2. The application's consumer, built on the guard, is running (the fix is deployed).
    const channel = await app.createChannel()
    await channel.prefetch(10)
    guard = createGuard({
      ...topology.guardOptions, connection: app, queue: names.work, lazarusUrl: api.url, retryDelayMs: 100,
      onError: (e) => errors.push(e.message), onHold: (e) => holds.push(e),
    })
    await guard.consume(channel, (message) => {
      if (!message) return
      handled.push({ ...JSON.parse(message.content.toString()), headers: message.properties.headers })
      channel.ack(message)
    })

    // 3. The operator replays E's dead letters; the source is order-sensitive, so E is paused first. No executor
    //    has picked the job up yet.
    const job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: dead.map((d) => d.id) }, target: { type: 'queue' }, ratePerSecond: 200 }, actor: 'ann' })) as ReplayCreatedDto
    expect(job.plan.pauseEntities).toBe(true)
    await waitFor(async () => guard.pauses().some((p) => p.entityKey === 'E'), { what: 'the guard to learn that E is paused' })

    // 4. New traffic: five messages of E, interleaved with other entities' messages.
    await publish([
      { orderId: 'E', step: 'new-1' }, { orderId: 'F', step: 'f-1' }, { orderId: 'E', step: 'new-2' }, { orderId: 'G', step: 'g-1' },
      { orderId: 'E', step: 'new-3' }, { orderId: 'E', step: 'new-4' }, { orderId: 'F', step: 'f-2' }, { orderId: 'E', step: 'new-5' },
    ])
    await waitFor(async () => {
      const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE status = 'held' AND held_from = $1`, [names.work])
      return rows[0].n === 5 && handled.length === 3
    }, { what: "E's five messages held and the others handled" })
    expect(handled.map((o) => o.orderId)).toEqual(['F', 'G', 'F'])

    // 5. The replay runs: replays first, then the held messages, then E is resumed.
    executor = startTestExecutor(db)
    const finished = await waitForJob(db.sql, job.id)
    expect(finished).toMatchObject({ status: 'completed', confirmed: 3, released: 5, total: 8 })
    await waitFor(async () => handled.filter((o) => o.orderId === 'E').length === 8, { what: "E's eight messages handled" })

    expect(handled.filter((o) => o.orderId === 'E').map((o) => o.step)).toEqual(['old-1', 'old-2', 'old-3', 'new-1', 'new-2', 'new-3', 'new-4', 'new-5'])
    expect(holds.map((h) => h.entityKey)).toEqual(['E', 'E', 'E', 'E', 'E'])
    // Replays carry their replay id, releases the release mark; neither keeps the guard's hold headers.
    const ofE = handled.filter((o) => o.orderId === 'E')
    expect(ofE.slice(0, 3).every((o) => typeof o.headers?.['x-lazarus-replay-id'] === 'string')).toBe(true)
    expect(ofE.slice(3).every((o) => o.headers?.['x-lazarus-release'] !== undefined)).toBe(true)
    expect(ofE.flatMap((o) => Object.keys(o.headers ?? {}).filter((k) => k.startsWith('x-lazarus-held-')))).toEqual([])
    const { rows: statuses } = await db.sql.query<{ status: string; n: number }>(
      `SELECT st.status, count(*)::int AS n FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id JOIN sources s ON s.id = d.source_id
       WHERE s.queue = $1 OR d.held_from = $2 GROUP BY st.status ORDER BY st.status`,
      [names.dlq, names.work],
    )
    expect(statuses).toEqual([{ status: 'replayed', n: 8 }])

    // 6. Resumed: the registry says so, the guard heard it, and E's next message goes straight to the handler.
    const pauses = await listPauses({ db, status: 'all' })
    expect(pauses.pauses.map((p) => [p.entityKey, p.status, p.replayJobId])).toEqual([['E', 'resumed', job.id]])
    await waitFor(async () => guard.pauses().length === 0, { what: 'the guard to learn the resume' })
    await publish([{ orderId: 'E', step: 'after' }])
    await waitFor(async () => handled.at(-1)?.step === 'after', { what: "E's next message handled directly" })
    expect(holds).toHaveLength(5)
    expect(errors).toEqual([])
  })
})
