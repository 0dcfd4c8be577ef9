import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { TestDb } from '../helpers/test-db'
import { queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { servePausesApi } from '../helpers/pause-api-server'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { createGuard, type Guard, type HoldEvent } from '@/packages/guard/src'
import { HELD_ENTITY_HEADER, HELD_FROM_HEADER, HELD_ID_HEADER, RELEASE_HEADER } from '@/packages/guard/src/protocol'
import { listGroups } from '@/lib/server/groups/list-groups'
import { createPause } from '@/lib/server/pauses/create-pause'
import { insertPauses } from '@/lib/server/pauses/insert-pause'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { resumePause } from '@/lib/server/pauses/resume-pause'
import type { PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

type Handled = { orderId: string; n: number }
const RULE = { kind: 'jsonPointer', pointer: '/orderId' } as const

describe('guard, hold and the hold source', () => {
  let db: TestDb
  let runtime: PauseRuntime
  let drainer: Drainer
  let api: Awaited<ReturnType<typeof servePausesApi>>
  let app: ChannelModel
  let sourceId: string
  const dlq = uniqueName('orders_dlq')
  const work = uniqueName('orders_work')
  const guards: Guard[] = []
  const errors: string[] = []

  /** An application consumer built on the guard: records what its handler saw, acks it. */
  async function startConsumer(queue: string, options: { pollIntervalMs?: number } = {}) {
    const channel = await app.createChannel()
    await channel.prefetch(20)
    const handled: Handled[] = []
    const holds: HoldEvent[] = []
    const guard = createGuard({
      ...topology.guardOptions, connection: app, queue, lazarusUrl: api.url, pollIntervalMs: options.pollIntervalMs ?? 60_000, retryDelayMs: 100,
      onError: (e) => errors.push(e.message), onHold: (e) => holds.push(e),
    })
    guards.push(guard)
    const consumer = await guard.consume(channel, (message) => {
      if (!message) return
      handled.push(JSON.parse(message.content.toString()))
      channel.ack(message)
    })
    return { guard, channel, consumer, handled, holds }
  }

  async function publish(queue: string, messages: (Handled & { headers?: Record<string, unknown> })[]) {
    const channel = await app.createConfirmChannel()
    for (const { headers, ...body } of messages) {
      channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { contentType: 'application/json', messageId: `m-${body.orderId}-${body.n}`, headers: { 'x-trace': 'abc', ...headers } })
    }
    await channel.waitForConfirms()
    await channel.close()
  }

  async function heldRows(queue: string) {
    const { rows } = await db.sql.query<{ id: string; entity_key: string; n: number; status: string; signature: string; title: string; headers: Record<string, any>; properties: Record<string, any> }>(
      `SELECT d.id::text, d.entity_key, (convert_from(d.body, 'UTF8')::jsonb->>'n')::int AS n, st.status, g.signature, g.title, d.headers, d.properties
       FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id JOIN error_groups g ON g.id = d.group_id WHERE d.held_from = $1 ORDER BY d.id`,
      [queue],
    )
    return rows
  }

  beforeAll(async () => {
    ;({ db, runtime, app } = await topology.startTestbed([dlq, work]))
    // The drainer drains every enabled source, lazarus.hold (registered by the runtime) included.
    const drain = await drainQueues(db, [dlq], { entityKey: RULE })
    drainer = drain.drainer
    sourceId = drain.sourceIds[dlq]
    api = await servePausesApi({ db })
  })

  afterAll(async () => {
    for (const guard of guards) await guard.close().catch(() => {})
    await drainer?.stop()
    await runtime?.stop()
    await api?.close()
    if (app) {
      const ch = await app.createChannel()
      for (const q of [dlq, work]) await ch.deleteQueue(q).catch(() => {})
      await app.close().catch(() => {})
    }
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  let main: Awaited<ReturnType<typeof startConsumer>>

  it("holds a paused entity's messages in lazarus.hold; the drainer stores them held, with held_from; others pass", async () => {
    main = await startConsumer(work)
    await main.guard.ready()
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-1', reason: 'stock sync broken' }, actor: 'ann', allowAnyQueue: true })
    // Learnt at once: the control event makes the guard re-read the list (polled only every minute here).
    await waitFor(async () => main.guard.pauses().some((p) => p.id === pause.id), { what: 'the guard to learn the pause' })

    await publish(work, [{ orderId: 'order-1', n: 1 }, { orderId: 'order-2', n: 2 }, { orderId: 'order-1', n: 3 }])
    const rows = await waitFor(async () => {
      const r = await heldRows(work)
      return r.length === 2 && r
    }, { what: 'two held rows' })
    await waitFor(async () => main.handled.length === 1, { what: 'order-2 handled' })

    expect(main.handled).toEqual([{ orderId: 'order-2', n: 2 }])
    expect(main.holds.map((h) => [h.pauseId, h.entityKey])).toEqual([[pause.id, 'order-1'], [pause.id, 'order-1']])
    expect(rows.map((r) => [r.entity_key, r.n, r.status, r.signature, r.title])).toEqual([
      ['order-1', 1, 'held', 'lazarus:held', 'Held while paused'],
      ['order-1', 3, 'held', 'lazarus:held', 'Held while paused'],
    ])
    // Stored as the application published it: the guard's x-lazarus-held-* headers became columns.
    expect(rows[0].properties).toMatchObject({ contentType: 'application/json', messageId: 'm-order-1-1' })
    expect(rows[0].headers).toEqual({ 'x-trace': { t: 'S', v: 'abc' } })
    // The originals were acked, never requeued (the last test closes the channel and finds nothing returned).
    expect(await queueDepth(work)).toBe(0)

    const listed = await listPauses({ db, status: 'active' })
    expect(listed.pauses.find((p) => p.id === pause.id)?.held).toBe(2)
    // The held group stays out of the triage list unless asked for.
    expect((await listGroups({ db, query: { sort: 'count', limit: 50 } })).groups.map((g) => g.signature)).not.toContain('lazarus:held')
    const heldGroup = (await listGroups({ db, query: { sort: 'count', limit: 50, includeHeld: true } })).groups.find((g) => g.signature === 'lazarus:held')
    expect(heldGroup).toMatchObject({ title: 'Held while paused', count: 2 })
  })

  it('lets messages Lazarus sends back (x-lazarus-release) through while the entity is paused; identical holds stay two', async () => {
    await publish(work, [{ orderId: 'order-1', n: 4, headers: { [RELEASE_HEADER]: 'job-1' } }, { orderId: 'order-1', n: 5 }, { orderId: 'order-1', n: 5 }])
    await waitFor(async () => main.handled.length === 2 && (await heldRows(work)).length === 4, { what: 'the release handled and the others held' })
    expect(main.handled.at(-1)).toEqual({ orderId: 'order-1', n: 4 })
    // The same message published twice is held twice (each hold has its own id): two rows, not one seen twice.
    expect((await heldRows(work)).map((r) => r.n)).toEqual([1, 3, 5, 5])
  })

  it('a lost event is made up for by the next one: every event makes the guard re-read the list', async () => {
    const before = api.requests()
    // A pause whose event never went out (committed, then the broker hiccuped): insertPauses publishes nothing, and the
    // guard polls only every minute here, so only another event's re-read can tell it. (Whether it already knows is not
    // asserted: a late event of an earlier test, on a loaded machine, may legitimately make it re-read sooner.)
    const [lost] = await db.sql.transaction((tx) => insertPauses({ sql: tx, actor: 'ann', pauses: [{ sourceId, vhost: '/', queue: work, entityKey: 'order-8', entityKeyRule: RULE, reason: 'lost' }] }))
    // ...then the next event arrives: the list it makes the guard read has both.
    const next = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-9', reason: 'next' }, actor: 'ann', allowAnyQueue: true })
    await waitFor(async () => main.guard.pauses().some((p) => p.id === lost.id) && main.guard.pauses().some((p) => p.id === next.id), { what: 'both pauses known' })
    expect(api.requests()).toBeGreaterThan(before)
  })

  it('a message held after its pause ended is released by the straggler sweep', async () => {
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-5', reason: 'short' }, actor: 'ann', allowAnyQueue: true })
    expect((await resumePause({ db, control: composition().control, id: pause.id, actor: 'ann' })).status).toBe('resumed')
    await waitFor(async () => !main.guard.pauses().some((p) => p.id === pause.id), { what: 'the guard to learn the resume' })
    await publish(work, [{ orderId: 'order-5', n: 1 }])
    await waitFor(async () => main.handled.some((h) => h.orderId === 'order-5'), { what: 'order-5 handled after the resume' })

    // A guard that had not heard of the resume yet holds one more.
    const channel = await app.createConfirmChannel()
    channel.publish(topology.hold, '', Buffer.from(JSON.stringify({ orderId: 'order-5', n: 2 })), { headers: { [HELD_FROM_HEADER]: work, [HELD_ENTITY_HEADER]: 'order-5', [HELD_ID_HEADER]: 'late-1' } })
    await channel.waitForConfirms()
    await channel.close()
    const { rows } = await waitFor(async () => {
      const result = await db.sql.query<{ kind: string; created_by: string; routing_key: string; status: string }>(
        `SELECT j.kind, j.created_by, i.routing_key, st.status FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id JOIN replay_items i ON i.dead_letter_id = d.id
         JOIN replay_jobs j ON j.id = i.job_id WHERE d.held_from = $1 AND d.entity_key = 'order-5'`,
        [work],
      )
      return result.rows.length > 0 && result
    }, { what: 'a release job for the straggler' })
    expect(rows).toEqual([{ kind: 'release', created_by: 'lazarus', routing_key: work, status: 'replaying' }])
  })

  it('a guard started after a pause learns it from GET /api/pauses and holds at once', async () => {
    const late = uniqueName('late_work')
    const ch = await app.createChannel()
    await ch.assertQueue(late, { durable: false })
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: late, entityKey: 'order-7', reason: 'before the guard' }, actor: 'ann', allowAnyQueue: true })
    const before = api.requests()
    const consumer = await startConsumer(late)
    expect(api.requests()).toBeGreaterThan(before)
    expect(consumer.guard.pauses().map((p) => p.id)).toEqual([pause.id])
    await publish(late, [{ orderId: 'order-7', n: 1 }, { orderId: 'order-6', n: 2 }])
    await waitFor(async () => (await heldRows(late)).length === 1 && consumer.handled.length === 1, { what: 'order-7 held, order-6 handled' })
    expect(consumer.handled).toEqual([{ orderId: 'order-6', n: 2 }])
    await ch.deleteQueue(late)
  })

  it('a whole-queue pause cancels the consumer until it is resumed; nothing is held', async () => {
    const queue = uniqueName('whole_work')
    const ch = await app.createChannel()
    await ch.assertQueue(queue, { durable: false })
    const consumer = await startConsumer(queue)
    expect(consumer.consumer.consumerTag).toEqual(expect.any(String))
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue, entityKey: null, reason: 'downstream maintenance' }, actor: 'ann', allowAnyQueue: true })
    await waitFor(async () => consumer.consumer.paused && consumer.consumer.consumerTag === null, { what: 'the consumer to stop' })
    expect((await ch.checkQueue(queue)).consumerCount).toBe(0)

    // Published with confirms into a queue with no consumer: all three are there, and nothing can take them.
    await publish(queue, [1, 2, 3].map((n) => ({ orderId: `order-${n}`, n })))
    expect(await queueDepth(queue)).toBe(3)
    expect((await ch.checkQueue(queue)).consumerCount).toBe(0)
    expect(consumer.handled).toEqual([])

    expect((await resumePause({ db, control: composition().control, id: pause.id, actor: 'ann' })).status).toBe('resumed')
    await waitFor(async () => consumer.handled.length === 3, { what: 'consumption to resume' })
    expect(consumer.handled.map((h) => h.n)).toEqual([1, 2, 3])
    expect(consumer.consumer.paused).toBe(false)
    expect((await ch.checkQueue(queue)).consumerCount).toBe(1)
    expect(await heldRows(queue)).toEqual([])
    await ch.deleteQueue(queue)
  })

  it('acked every held original: closing the consumer channel returns nothing to the queue', async () => {
    await main.guard.close()
    await main.channel.close()
    expect(await queueDepth(work)).toBe(0)
  })

  it('a guard closed while consume() still waits for the pause list starts no consumer', async () => {
    const queue = uniqueName('closed_guard_work')
    const channel = await app.createChannel()
    await channel.assertQueue(queue, { durable: false })
    // Lazarus unreachable and no start timeout: consume() waits for the first pause list until the guard closes.
    const guard = createGuard({ ...topology.guardOptions, connection: app, queue, lazarusUrl: 'http://127.0.0.1:9', startTimeoutMs: Infinity, retryDelayMs: 50, onError: () => {} })
    const consuming = guard.consume(channel, () => {})
    await guard.close()
    await expect(consuming).rejects.toThrow(/closed before its consumer started/)
    expect((await channel.checkQueue(queue)).consumerCount).toBe(0)
    await channel.deleteQueue(queue)
    await channel.close()
  })

  it('reported no unexpected problems', () => {
    expect(errors).toEqual([])
  })
})
