import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, type Channel, type ChannelModel, type ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import { getConfig } from '@/lib/server/platform/config'
import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import { declarePauseTopology } from '@/lib/server/engines/release/pause-runtime'
import { registerHoldSource } from '@/lib/server/engines/release/release-store'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { createSource } from '@/lib/server/sources/create-source'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { createSourceSchema } from '@/lib/shared/schemas/source'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { management, MANAGEMENT_URL, waitForQueueStats } from '../helpers/management'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { collect, deadLetterThrough, declareWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

/**
 * docs/rabbitmq.md#broker-permissions, proven: Lazarus drains, replays (to the source exchange and through the default
 * exchange), pauses and holds with a RabbitMQ user that has exactly the documented permissions, and reads the management
 * API with a user tagged `management` that has no permission at all on the vhost. Both users are created for this file
 * and deleted after it. The test's own setup (queues, messages, checks) runs as guest.
 */
const topology = isolatePauseTopology()
const suffix = randomBytes(4).toString('hex')
const password = randomBytes(16).toString('hex')
const users = { amqp: `lazarus_amqp_${suffix}`, management: `lazarus_mgmt_${suffix}` }
const LAZARUS_AMQP_URL = `amqp://${users.amqp}:${password}@127.0.0.1:5672`
// Before anything reads the configuration: Lazarus' own connections (control events, management API) use these.
process.env.AMQP_URL = LAZARUS_AMQP_URL
process.env.RABBITMQ_MANAGEMENT_URL = `http://${users.management}:${password}@127.0.0.1:15672`

const names = { exchange: uniqueName('perm_orders'), key: 'order.created', work: uniqueName('perm_work'), dlq: uniqueName('perm_dlq') }

const re = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const alternatives = (list: string[]) => `^(${list.map(re).join('|')})$`

/**
 * The documented permissions for this file's names: configure Lazarus' control and hold exchanges and hold queue; write
 * to the control exchange (events), the hold queue (its binding), the default exchange (`amq.default`: failed-queue
 * replays and releases) and the exchanges replays go to; read the drained DLQs and the hold queue (and the hold
 * exchange, for the binding).
 */
const permissions = {
  configure: alternatives([topology.control, topology.hold]),
  write: `^(${[topology.control, topology.hold].map(re).join('|')}|amq\\.default|${re(names.exchange)})$`,
  read: alternatives([topology.hold, names.dlq]),
}

describe('Lazarus with least-privilege RabbitMQ users', () => {
  let db: TestDb
  let admin: ChannelModel
  let channel: Channel
  let drainer: Drainer | undefined
  let executor: ReplayExecutor | undefined
  let sourceId: string
  const events: { type: string; pause: { entityKey: string } }[] = []

  beforeAll(async () => {
    topology.assertConfigured()
    expect(getConfig().AMQP_URL).toBe(LAZARUS_AMQP_URL)
    for (const [user, tags, perms] of [
      [users.amqp, '', permissions],
      [users.management, 'management', { configure: '^$', write: '^$', read: '^$' }],
    ] as const) {
      expect((await management('PUT', `/api/users/${user}`, { password, tags })).ok).toBe(true)
      expect((await management('PUT', `/api/permissions/%2F/${user}`, perms)).ok).toBe(true)
    }
    db = await createTestDb()

    // The applications' side, as guest: orders are published to an exchange, fail in the work queue and are
    // dead-lettered into the DLQ.
    admin = await brokerConnection()
    channel = await admin.createChannel()
    await declareWorkTopology(channel, names)
    await deadLetterThrough(admin, {
      ...names,
      messages: ['order-1', 'order-2'].map((entity) => ({ body: Buffer.from(JSON.stringify({ entity })), options: { messageId: entity, headers: { 'x-entity-key': entity } } })),
    })
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await closeComposition()
    for (const user of Object.values(users)) await management('DELETE', `/api/users/${user}`)
    for (const q of [names.work, names.dlq]) await channel?.deleteQueue(q).catch(() => {})
    await channel?.deleteExchange(names.exchange).catch(() => {})
    await admin?.close().catch(() => {})
    await topology.cleanup()
    await db?.drop()
  })

  it('declares the pause topology and registers the hold queue', async () => {
    const lazarus = await connect(LAZARUS_AMQP_URL)
    try {
      await declarePauseTopology(lazarus, { control: topology.control, hold: topology.hold })
    } finally {
      await lazarus.close()
    }
    await registerHoldSource({ sql: db.sql, vhost: '/', queue: topology.hold })
    const { queue } = await channel.assertQueue('', { exclusive: true })
    await channel.bindQueue(queue, topology.control, '#')
    await channel.consume(queue, (m) => m && events.push(JSON.parse(m.content.toString())), { noAck: true })
  })

  it('checks and adds the source through the management user (tag management, no vhost permissions)', async () => {
    // It sees other users' consumers: a worker on the work queue makes that queue no source.
    const { consumerTag } = await channel.consume(names.work, () => {})
    await waitForQueueStats(names.work, (s) => (s.consumers ?? 0) === 1, 'the worker in the statistics')
    await expect(createSource({ db, input: createSourceSchema.parse({ queue: names.work }), actor: 'admin@lazarus.test' })).rejects.toMatchObject({ code: 'conflict', details: { evidence: [{ kind: 'other-consumers', consumers: 1 }] } })
    await channel.cancel(consumerTag)

    const source = await createSource({ db, input: createSourceSchema.parse({ queue: names.dlq, orderSensitive: true }), actor: 'admin@lazarus.test' })
    sourceId = source.id
    expect(source).toMatchObject({ queue: names.dlq, enabled: true })
  })

  it('drains the DLQ and the hold queue', async () => {
    drainer = startDrainer({
      db,
      config: { AMQP_URL: LAZARUS_AMQP_URL, LAZARUS_DRAIN_BATCH: 100, LAZARUS_DRAIN_PREFETCH: 200, LAZARUS_DRAIN_FLUSH_MS: 20, LAZARUS_MAX_BODY_BYTES: 16 * 1024 * 1024 },
      reconcileMs: 500,
    })
    await waitFor(async () => (await db.sql.query('SELECT 1 FROM dead_letters WHERE source_id = $1::bigint', [sourceId])).rows.length === 2, { what: 'both dead letters stored' })
    await waitFor(async () => drainer!.status().sources.length === 2 && drainer!.status().sources.every((s) => s.draining && s.error === null), {
      what: 'the DLQ and the hold queue drained without errors',
    })
    const { rows } = await db.sql.query<{ origin_exchange: string; origin_queue: string; entity_key: string }>(
      'SELECT origin_exchange, origin_queue, entity_key FROM dead_letters WHERE source_id = $1::bigint ORDER BY entity_key',
      [sourceId],
    )
    expect(rows).toEqual([
      { origin_exchange: names.exchange, origin_queue: names.work, entity_key: 'order-1' },
      { origin_exchange: names.exchange, origin_queue: names.work, entity_key: 'order-2' },
    ])
  })

  it('plans with the management user and replays to the source exchange and to the failed queue, pausing the entities', async () => {
    executor = startTestExecutor(db, { amqpUrl: LAZARUS_AMQP_URL, amqpUser: users.amqp })
    const id = async (entity: string) => (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE entity_key = $1', [entity])).rows[0].id

    const toSource = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [await id('order-1')] } }, actor: 'ann' })) as ReplayCreatedDto
    // The bindings were read: the management user sees the exchange and where the key goes.
    expect(toSource.plan).toMatchObject({ pauseEntities: true, targets: [{ exchange: names.exchange, exists: true, queues: 1, queueNames: [names.work] }] })
    expect(toSource.plan.warnings.join(' ')).not.toMatch(/Could not check/)
    expect(await waitForJob(db.sql, toSource.id)).toMatchObject({ status: 'completed', confirmed: 1, failed: 0 })

    const toQueue = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [await id('order-2')] }, target: { type: 'queue' } }, actor: 'ann' })) as ReplayCreatedDto
    expect(await waitForJob(db.sql, toQueue.id)).toMatchObject({ status: 'completed', confirmed: 1, failed: 0 })

    const received = await collect(admin, names.work, 2, 10_000)
    expect(received.map((m) => [m.fields.exchange, m.properties.messageId])).toEqual([
      [names.exchange, 'order-1'],
      ['', 'order-2'],
    ])
    // Each replay paused its entity and resumed it: events on the control exchange, published by the Lazarus user.
    await waitFor(async () => events.length >= 4, { what: 'pause and resume events' })
    expect(events.map((e) => [e.type, e.pause.entityKey])).toEqual([
      ['pause', 'order-1'],
      ['resume', 'order-1'],
      ['pause', 'order-2'],
      ['resume', 'order-2'],
    ])
  })

  it('and nothing else: the Lazarus user cannot consume a work queue, publish elsewhere or declare, the management user cannot change anything', async () => {
    const lazarus = await connect(LAZARUS_AMQP_URL)
    lazarus.on('error', () => {})
    const refused = async (what: (ch: ConfirmChannel) => Promise<unknown>) => {
      const ch = await lazarus.createConfirmChannel()
      ch.on('error', () => {})
      const error = await what(ch).then(() => null, (e: Error) => e)
      return error?.message ?? ''
    }
    try {
      expect(await refused((ch) => ch.consume(names.work, () => {}))).toMatch(/ACCESS_REFUSED/)
      expect(await refused((ch) => ch.assertQueue(uniqueName('perm_probe'), { durable: false }))).toMatch(/ACCESS_REFUSED/)
      expect(
        await refused(
          (ch) =>
            new Promise((resolve, reject) => {
              ch.on('close', () => reject(new Error('channel closed: ACCESS_REFUSED expected')))
              ch.on('error', reject)
              ch.publish('amq.topic', 'x', Buffer.from('x'), {}, (error) => (error ? reject(error) : resolve(null)))
            }),
        ),
      ).toMatch(/ACCESS_REFUSED|closed/)
    } finally {
      await lazarus.close().catch(() => {})
    }

    const asManagementUser = (method: string, path: string, body?: unknown) =>
      fetch(MANAGEMENT_URL + path, {
        method,
        headers: { authorization: `Basic ${Buffer.from(`${users.management}:${password}`).toString('base64')}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    expect((await asManagementUser('GET', `/api/queues/%2F/${names.dlq}`)).status).toBe(200)
    expect((await asManagementUser('DELETE', `/api/queues/%2F/${names.work}`)).ok).toBe(false)
    expect((await asManagementUser('PUT', `/api/queues/%2F/${uniqueName('perm_probe')}`, { durable: false })).ok).toBe(false)
    const published = await asManagementUser('POST', `/api/exchanges/%2F/${names.exchange}/publish`, { properties: {}, routing_key: names.key, payload: 'x', payload_encoding: 'string' })
    expect(published.ok && (await published.json()).routed === true).toBe(false)
    expect((await asManagementUser('POST', `/api/queues/%2F/${names.dlq}/get`, { count: 1, ackmode: 'ack_requeue_false', encoding: 'auto' })).ok).toBe(false)
  })
})
