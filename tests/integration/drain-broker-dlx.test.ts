import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { drainQueues, storedCount } from '../helpers/drainer'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'

// Messages dead-lettered by RabbitMQ itself, through a real DLX, for each reason the broker knows.
describe('draining broker dead letters', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  const exchange = uniqueName('orders')
  const dlx = uniqueName('orders_dlx')
  const work = uniqueName('orders_work')
  const ttlQueue = uniqueName('orders_ttl')
  const boundedQueue = uniqueName('orders_bounded')
  const dlq = uniqueName('orders_dlq')
  let sourceId: string

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertExchange(exchange, 'topic', { autoDelete: false })
    await channel.assertExchange(dlx, 'fanout', { autoDelete: false })
    await channel.assertQueue(dlq, { durable: false })
    await channel.bindQueue(dlq, dlx, '')
    const deadLettering = { deadLetterExchange: dlx }
    await channel.assertQueue(work, { durable: false, ...deadLettering })
    await channel.assertQueue(ttlQueue, { durable: false, messageTtl: 50, ...deadLettering })
    await channel.assertQueue(boundedQueue, { durable: false, maxLength: 2, ...deadLettering })
    await channel.bindQueue(work, exchange, 'order.created')
    await channel.bindQueue(ttlQueue, exchange, 'order.expiring')
    await channel.bindQueue(boundedQueue, exchange, 'order.flood')
    ;({ drainer, sourceIds: { [dlq]: sourceId } } = await drainQueues(db, [dlq]))
  })

  afterAll(async () => {
    await drainer?.stop()
    for (const q of [work, ttlQueue, boundedQueue, dlq]) await channel.deleteQueue(q).catch(() => {})
    for (const x of [exchange, dlx]) await channel.deleteExchange(x).catch(() => {})
    await connection?.close()
    await db?.drop()
  })

  it('stores rejected, expired and overflowed messages with reason, attempts and origin', async () => {
    const publish = (key: string, id: string) =>
      channel.publish(exchange, key, Buffer.from(JSON.stringify({ id })), { messageId: id, contentType: 'application/json', persistent: true })

    publish('order.created', 'rejected-1')
    const delivery = await waitFor(async () => (await channel.get(work, { noAck: false })) || null, { what: 'work message' })
    channel.nack(delivery, false, false)

    publish('order.expiring', 'expired-1')
    for (let i = 1; i <= 4; i++) publish('order.flood', `flood-${i}`)

    await waitFor(async () => (await storedCount(db.sql, sourceId)) === 4 || null, { what: '4 stored dead letters', timeoutMs: 30_000 })
    const { rows } = await db.sql.query<{ message_id: string; death_reason: string; failure_kind: string; attempts: number; origin_exchange: string; origin_routing_keys: string[]; origin_queue: string }>(
      `SELECT properties->>'messageId' AS message_id, death_reason, failure_kind, attempts, origin_exchange, origin_routing_keys, origin_queue
       FROM dead_letters WHERE source_id = $1::bigint ORDER BY properties->>'messageId'`,
      [sourceId],
    )
    const byId = Object.fromEntries(rows.map((r) => [r.message_id, r]))
    expect(byId['rejected-1']).toMatchObject({ death_reason: 'rejected', origin_exchange: exchange, origin_routing_keys: ['order.created'], origin_queue: work, attempts: 1 })
    expect(byId['expired-1']).toMatchObject({ death_reason: 'expired', failure_kind: 'expired', origin_queue: ttlQueue, origin_routing_keys: ['order.expiring'] })
    // max-length drop-head dead-letters the oldest two of four.
    expect(byId['flood-1']).toMatchObject({ death_reason: 'maxlen', failure_kind: 'overflow', origin_queue: boundedQueue })
    expect(byId['flood-2']).toMatchObject({ death_reason: 'maxlen', failure_kind: 'overflow' })
    expect(byId['flood-3']).toBeUndefined()
    await waitFor(async () => (await queueDepth(dlq)) === 0 || null, { what: 'empty DLQ' })
  })

  it('keeps the group counters and source counts in step with what was stored', async () => {
    const { rows: groups } = await db.sql.query<{ total: number }>('SELECT sum(count)::int AS total FROM error_groups')
    const { rows: source } = await db.sql.query<{ drained_count: string }>('SELECT drained_count::text FROM sources WHERE id = $1::bigint', [sourceId])
    const stored = await storedCount(db.sql, sourceId)
    expect(groups[0].total).toBe(stored)
    expect(Number(source[0].drained_count)).toBe(stored)
  })
})
