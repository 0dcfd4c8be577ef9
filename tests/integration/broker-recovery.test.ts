import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { HELD_FROM_HEADER, HELD_ID_HEADER } from '@/packages/guard/src/protocol'
import { classifyAmqpError } from '@/lib/server/platform/broker/amqp-errors'
import { BROKER_PROCESS_TAG, BrokerConnection } from '@/lib/server/platform/broker/connection'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { getHealth, type Health } from '@/lib/server/health/get-health'
import { createPause } from '@/lib/server/pauses/create-pause'
import { startPauseRuntime, type PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { resumePause } from '@/lib/server/pauses/resume-pause'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { AMQP_URL, brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { management, managementJson } from '../helpers/management'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { bulkRows, collect, jobState, replayIdOf, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

/**
 * lib/server/platform/broker under fire: the pause topology is deleted (durable objects survive a dropped connection, so only a
 * re-declaration brings them back), then every broker connection of this process is closed by the broker (management
 * API), while the drainer drains, a replay publishes, control events go out and health is polled. Everything must
 * recover and re-declare; messages are counted in and out.
 */
const topology = isolatePauseTopology()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const vhost = encodeURIComponent('/')

type ListedConnection = { name: string; client_properties?: { connection_name?: string; lazarus_process?: string } }

/** This process's Lazarus connections as the management API lists them (it lists new ones after a statistics tick). */
async function ownConnections(): Promise<ListedConnection[]> {
  const all = await managementJson<ListedConnection[]>('/api/connections')
  return all.filter((c) => c.client_properties?.lazarus_process === BROKER_PROCESS_TAG)
}

const exists = async (path: string) => (await management('GET', path)).status === 200

describe('one broker layer: recovery and re-declaration', () => {
  let db: TestDb
  let app: ChannelModel
  let publisher: ConfirmChannel
  let runtime: PauseRuntime
  let drainer: Drainer
  let executor: ReplayExecutor
  let dlqSourceId: string
  const dlq = uniqueName('rec_dlq')
  const exchange = uniqueName('rec_x')
  const work = uniqueName('rec_work')
  const heldFrom = uniqueName('rec_held_from')
  const events: { type: string; pause: { id: string } }[] = []
  let eventQueue: string
  let eventChannel: Channel

  const heldCount = async () =>
    (await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letters WHERE held_from = $1`, [heldFrom])).rows[0].n

  /** What a guard does: a confirmed publish to the hold exchange. */
  async function hold(n: number) {
    publisher.publish(topology.hold, '', Buffer.from(JSON.stringify({ n })), { headers: { [HELD_FROM_HEADER]: heldFrom, [HELD_ID_HEADER]: `held-${n}` } })
    await publisher.waitForConfirms()
  }

  async function listenForEvents() {
    await eventChannel.bindQueue(eventQueue, topology.control, '#')
  }

  async function pauseAndResume(i: number): Promise<string> {
    const pause = await createPause({ db, control: composition().control, input: { sourceId: dlqSourceId, queue: work, entityKey: `entity-${i}`, reason: 'broker recovery test' }, actor: 'ann', allowAnyQueue: true })
    await resumePause({ db, control: composition().control, id: pause.id, actor: 'ann' })
    return pause.id
  }

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    app = await brokerConnection()
    publisher = await app.createConfirmChannel()
    await publisher.assertQueue(dlq, { durable: true })
    await publisher.assertExchange(exchange, 'direct', { durable: false })
    await publisher.assertQueue(work, { durable: false })
    await publisher.bindQueue(work, exchange, 'k')
    eventChannel = await app.createChannel()
    ;({ queue: eventQueue } = await eventChannel.assertQueue('', { exclusive: true }))
    await eventChannel.consume(eventQueue, (m: ConsumeMessage | null) => m && events.push(JSON.parse(m.content.toString())), { noAck: true })

    runtime = await startPauseRuntime({ db, control: composition().brokers.control, config: topology.config, sweepMs: 500 })
    await runtime.topologyReady
    const drain = await drainQueues(db, [dlq], { batch: 50, prefetch: 100 })
    drainer = drain.drainer
    dlqSourceId = drain.sourceIds[dlq]
    executor = startTestExecutor(db, { window: 100 })
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await runtime?.stop()
    await closeComposition()
    if (app) {
      const ch = await app.createChannel()
      for (const q of [dlq, work]) await ch.deleteQueue(q).catch(() => {})
      await ch.deleteExchange(exchange).catch(() => {})
      await app.close().catch(() => {})
    }
    await topology.cleanup()
    await db?.drop()
  })

  it('re-declares the pause topology and recovers drain, replay, control events and health after its connections are killed', async () => {
    // --- Before: every user at work, each on its own named connection.
    const REPLAYED = 4_000
    await storeBulk(db.sql, uniqueName('rec_src'), bulkRows(REPLAYED, { originExchange: exchange, originKey: 'k', originQueue: work }))
    const { rows: replayIds } = await db.sql.query<{ id: string }>(`SELECT d.id::text FROM dead_letters d JOIN sources s ON s.id = d.source_id WHERE s.enabled = false`)
    const job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: replayIds.map((r) => r.id) }, ratePerSecond: 200, confirmCount: REPLAYED }, actor: 'ann' })) as ReplayCreatedDto
    executor.wake()

    await listenForEvents()
    const before = [await pauseAndResume(0), await pauseAndResume(1)]
    for (let n = 0; n < 3; n++) await hold(n)
    await waitFor(async () => (await heldCount()) === 3, { what: '3 held messages stored' })
    await waitFor(async () => events.length === 4, { what: '4 control events' })
    expect(events.map((e) => [e.type, e.pause.id])).toEqual(before.flatMap((id) => [['pause', id], ['resume', id]]))

    // Drain load for the whole test: confirmed publishes (a message the broker never took would be the test's loss).
    let published = 0
    let publishing = true
    const drainLoad = (async () => {
      while (publishing) {
        for (let i = 0; i < 20; i++) publisher.sendToQueue(dlq, Buffer.from(`m-${published + i}`), { messageId: `m-${published + i}`, persistent: true })
        await publisher.waitForConfirms()
        published += 20
        await sleep(100)
      }
    })()
    // Health polled throughout (its result is cached for 5 s).
    const healthSeen: Health['broker'][] = []
    let polling = true
    const healthLoad = (async () => {
      while (polling) {
        healthSeen.push((await getHealth({ db, broker: composition().brokers.health, engines: null })).broker)
        await sleep(200)
      }
    })()

    const names = ['lazarus-drainer', 'lazarus-replay', 'lazarus-control', 'lazarus-health']
    const listed = await waitFor(
      async () => {
        const own = await ownConnections()
        return names.every((n) => own.some((c) => c.client_properties?.connection_name === n)) && own
      },
      { what: 'the four connections listed', timeoutMs: 30_000, intervalMs: 500 },
    )

    // --- The pause topology deleted: the exchanges, the queue (with the binding). Nothing publishes events meanwhile.
    await publisher.deleteExchange(topology.control)
    await publisher.deleteQueue(topology.hold)
    await publisher.deleteExchange(topology.hold)
    expect(await exists(`/api/queues/${vhost}/${topology.hold}`)).toBe(false)
    expect(await exists(`/api/exchanges/${vhost}/${topology.control}`)).toBe(false)

    // --- Every connection of this process closed by the broker, mid-replay and mid-drain.
    const midway = await jobState(db.sql, job.id)
    expect(midway.status).toBe('running')
    expect(midway.confirmed).toBeGreaterThan(0)
    expect(midway.confirmed).toBeLessThan(REPLAYED)
    for (const c of listed) expect((await management('DELETE', `/api/connections/${encodeURIComponent(c.name)}`)).ok).toBe(true)

    // --- Re-declared by the setup hook after the reconnection: only it declares the hold queue and its binding.
    await waitFor(async () => (await exists(`/api/queues/${vhost}/${topology.hold}`)) || null, { what: 'hold queue re-declared', timeoutMs: 30_000 })
    const queue = await managementJson<{ durable: boolean; arguments: Record<string, unknown> }>(`/api/queues/${vhost}/${topology.hold}`)
    expect(queue).toMatchObject({ durable: true, arguments: { 'x-single-active-consumer': true } })
    expect(await managementJson(`/api/exchanges/${vhost}/${topology.hold}`)).toMatchObject({ type: 'fanout', durable: true })
    expect(await managementJson(`/api/exchanges/${vhost}/${topology.control}`)).toMatchObject({ type: 'topic', durable: true })
    const bindings = await managementJson<{ source: string }[]>(`/api/queues/${vhost}/${topology.hold}/bindings`)
    expect(bindings.map((b) => b.source)).toContain(topology.hold)

    // Every connection is back: new ones, under the same names.
    const killed = new Set(listed.map((c) => c.name))
    await waitFor(
      async () => {
        const own = await ownConnections()
        return names.every((n) => own.some((c) => c.client_properties?.connection_name === n && !killed.has(c.name))) || null
      },
      { what: 'the four connections back', timeoutMs: 30_000, intervalMs: 500 },
    )

    // --- Control events: the listener binds to the re-declared exchange; every event after that arrives, once.
    await listenForEvents()
    const after = [await pauseAndResume(2), await pauseAndResume(3), await pauseAndResume(4)]
    await waitFor(async () => events.length === 10, { what: '6 more control events', timeoutMs: 15_000 })
    expect(events.slice(4).map((e) => [e.type, e.pause.id])).toEqual(after.flatMap((id) => [['pause', id], ['resume', id]]))

    // --- Holds: the drainer consumes the re-declared hold queue.
    for (let n = 3; n < 6; n++) await hold(n)
    await waitFor(async () => (await heldCount()) === 6, { what: 'all 6 held messages stored', timeoutMs: 30_000 })
    expect(await queueDepth(topology.hold)).toBe(0)

    // --- Drain: everything published is stored exactly once (redeliveries of unacked deliveries are recognised).
    publishing = false
    await drainLoad
    await waitFor(async () => {
      const { rows } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint', [dlqSourceId])
      return rows[0].n >= published || null
    }, { what: `all ${published} drained`, timeoutMs: 60_000 })
    const { rows: drained } = await db.sql.query<{ n: number; ids: number; seen: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT properties->>'messageId')::int AS ids, sum(seen_count)::int AS seen FROM dead_letters WHERE source_id = $1::bigint`,
      [dlqSourceId],
    )
    expect(drained[0]).toEqual({ n: published, ids: published, seen: published })
    expect(await queueDepth(dlq)).toBe(0)
    expect(drainer.status()).toMatchObject({ state: 'running', brokerError: null })

    // --- Replay: the job finishes on the new connection. Publishes unconfirmed when their channel died are failed (their
    // messages stay dead) and may or may not have arrived: a second replay sends those again. Every message arrives at
    // least once; the duplicates are at most the publishes that were in flight at the kill.
    const first = await waitForJob(db.sql, job.id, ['completed', 'failed'], 60_000)
    expect(first).toMatchObject({ status: 'completed', total: REPLAYED, unroutable: 0, skipped: 0 })
    expect(first.confirmed + first.failed).toBe(REPLAYED)
    expect(first.failed).toBeLessThanOrEqual(100)
    if (first.failed > 0) {
      const { rows } = await db.sql.query<{ id: string }>(
        `SELECT d.id::text FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id JOIN sources s ON s.id = d.source_id
         WHERE s.enabled = false AND st.status = 'dead'`,
      )
      expect(rows).toHaveLength(first.failed)
      const again = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: rows.map((r) => r.id) }, ratePerSecond: 1_000, confirmCount: rows.length }, actor: 'ann' })) as ReplayCreatedDto
      executor.wake()
      expect(await waitForJob(db.sql, again.id)).toMatchObject({ status: 'completed', confirmed: first.failed, failed: 0 })
    }
    const { rows: statuses } = await db.sql.query<{ status: string; n: number }>(
      `SELECT st.status, count(*)::int AS n FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id JOIN sources s ON s.id = d.source_id
       WHERE s.enabled = false GROUP BY 1`,
    )
    expect(statuses).toEqual([{ status: 'replayed', n: REPLAYED }])
    // Every confirmed publish is in the queue by now, and so is every unconfirmed one that arrived.
    const all = await collect(app, work, await queueDepth(work), 30_000)
    const perMessage = new Map<string, number>()
    const perReplayId = new Map<string, number>()
    for (const m of all) {
      perMessage.set(m.properties.messageId, (perMessage.get(m.properties.messageId) ?? 0) + 1)
      perReplayId.set(replayIdOf(m)!, (perReplayId.get(replayIdOf(m)!) ?? 0) + 1)
    }
    expect(perMessage.size).toBe(REPLAYED)
    expect(all.length - REPLAYED).toBeLessThanOrEqual(first.failed)
    expect([...perReplayId.values()].every((n) => n === 1)).toBe(true)
    const { rows: confirmedIds } = await db.sql.query<{ replay_id: string }>(`SELECT replay_id FROM replay_items WHERE status = 'confirmed'`)
    expect(confirmedIds.filter((r) => !perReplayId.has(r.replay_id))).toEqual([])

    // --- Health: once its cache has expired, the new health connection answers.
    await waitFor(async () => (await getHealth({ db, broker: composition().brokers.health, engines: null })).broker.ok || null, { what: 'health ok again', timeoutMs: 15_000, intervalMs: 500 })
    polling = false
    await healthLoad
    expect(healthSeen.length).toBeGreaterThan(10)
    expect(healthSeen.at(-1)).toEqual({ ok: true, error: null })
  })

  it('ranks the errors a real broker sends by their reply codes, and retries a failing setup hook without holding up the others', async () => {
    const broker = new BrokerConnection({ url: AMQP_URL, name: 'lazarus-test-ranks' })
    const conflicting = uniqueName('rec_conflict')
    const declared = uniqueName('rec_declared')
    try {
      const missing = await broker.withChannel((ch) => ch.checkQueue(uniqueName('rec_missing'))).catch((e: unknown) => e)
      expect(classifyAmqpError(missing)).toBe('channel')
      expect(await broker.queueExists(uniqueName('rec_missing'))).toBe(false)
      expect(await broker.queueExists(dlq)).toBe(true)

      // A queue declared with other arguments than a hook asks for: 406, refused until someone changes one of them.
      await publisher.assertQueue(conflicting, { durable: false, arguments: { 'x-max-length': 10 } })
      const refused = await broker.withChannel((ch) => ch.assertQueue(conflicting, { durable: false })).catch((e: unknown) => e)
      expect(classifyAmqpError(refused)).toBe('caller')

      let attempts = 0
      const failing = broker.addSetup('conflicting queue', async (connection) => {
        attempts++
        const ch = await connection.createChannel()
        ch.on('error', () => {})
        await ch.assertQueue(conflicting, { durable: false })
        await ch.close()
      })
      const fine = broker.addSetup('declared queue', async (connection) => {
        const ch = await connection.createChannel()
        await ch.assertQueue(declared, { durable: false })
        await ch.close()
      })
      await fine.ready
      expect(await broker.queueExists(declared)).toBe(true)
      let failingReady = false
      void failing.ready.then(() => (failingReady = true))
      // Tried, refused, and tried again (with its backoff), still refused: the hook keeps failing while the conflict stands.
      await waitFor(async () => attempts >= 3 || null, { what: 'the failing hook to be retried twice', timeoutMs: 15_000 })
      expect(failingReady).toBe(false)
      // The conflict goes away: the hook's next retry succeeds.
      await publisher.deleteQueue(conflicting)
      await waitFor(async () => failingReady || null, { what: 'the failing hook to succeed on a retry', timeoutMs: 15_000 })
      expect(await broker.queueExists(conflicting)).toBe(true)

      // Closed by the broker: connection-level, and the hooks run again on the new connection.
      const disconnected = new Promise<Error>((resolve) => broker.on('disconnect', resolve))
      await publisher.deleteQueue(declared)
      const listed = await waitFor(
        async () => (await ownConnections()).filter((c) => c.client_properties?.connection_name === 'lazarus-test-ranks').at(0),
        { what: 'the test connection listed', timeoutMs: 30_000, intervalMs: 500 },
      )
      await management('DELETE', `/api/connections/${encodeURIComponent(listed.name)}`)
      const error = await disconnected
      expect(classifyAmqpError(error)).toBe('connection')
      expect((error as { code?: number }).code).toBe(320)
      await waitFor(async () => (broker.connected && (await broker.queueExists(declared))) || null, { what: 'the hook re-declared its queue', timeoutMs: 30_000 })
    } finally {
      await broker.close()
      await publisher.deleteQueue(conflicting).catch(() => {})
      await publisher.deleteQueue(declared).catch(() => {})
    }
  })
})
