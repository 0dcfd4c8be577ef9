import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import { createSource } from '@/lib/server/sources/create-source'
import { deleteSource } from '@/lib/server/sources/delete-source'
import { updateSource } from '@/lib/server/sources/update-source'
import { Signal } from '@/lib/server/platform/signal'
import { createSourceSchema, updateSourceSchema } from '@/lib/shared/schemas/source'
import { AMQP_URL, brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * A source added, edited, disabled or removed through the API applies to this process's drainer before the API
 * answers (the composition root's `sourcesChanged` signal): the drainer here re-reads its sources only every ten minutes, so
 * whatever it does within the test, the change told it.
 */
describe('source changes through the API apply to the drainer before the answer', () => {
  let db: TestDb
  let drainer: Drainer
  let connection: ChannelModel
  const queue = uniqueName('changes_dlq')
  const empty = uniqueName('changes_empty')
  const actor = 'admin@lazarus.test'
  const sourcesChanged = new Signal()
  const draining = () => drainer.status().sources.map((s) => s.queue)

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    const channel = await connection.createChannel()
    for (const q of [queue, empty]) await channel.assertQueue(q, { durable: true })
    await channel.close()
    drainer = startDrainer({
      db,
      config: { AMQP_URL, LAZARUS_DRAIN_BATCH: 50, LAZARUS_DRAIN_PREFETCH: 100, LAZARUS_DRAIN_FLUSH_MS: 20, LAZARUS_MAX_BODY_BYTES: 1 << 20 },
      reconcileMs: 600_000,
      sourcesChanged,
    })
    await waitFor(async () => drainer.status().state === 'running', { what: 'the drainer to connect' })
  })

  afterAll(async () => {
    await drainer?.stop()
    if (connection) {
      const channel = await connection.createChannel()
      for (const q of [queue, empty]) await channel.deleteQueue(q).catch(() => {})
      await connection.close().catch(() => {})
    }
    await db?.drop()
  })

  it('a new source drains at once, an edited entity rule reads the next message, a disabled or removed one stops', async () => {
    const source = await createSource({ db, sourcesChanged, input: createSourceSchema.parse({ queue }), actor })
    expect(draining()).toContain(queue)

    await updateSource({ db, sourcesChanged, id: source.id, input: updateSourceSchema.parse({ entityKey: { kind: 'jsonPointer', pointer: '/orderId' } }), actor })
    const channel = await connection.createConfirmChannel()
    channel.sendToQueue(queue, Buffer.from(JSON.stringify({ orderId: 'order-77' })), { contentType: 'application/json', messageId: 'changes-1' })
    await channel.waitForConfirms()
    await channel.close()
    const stored = await waitFor(async () => {
      const { rows } = await db.sql.query<{ entity_key: string | null }>("SELECT entity_key FROM dead_letters WHERE properties->>'messageId' = $1", ['changes-1'])
      return rows[0]
    }, { what: 'the message to be stored' })
    expect(stored.entity_key).toBe('order-77')

    await updateSource({ db, sourcesChanged, id: source.id, input: updateSourceSchema.parse({ enabled: false }), actor })
    expect(draining()).not.toContain(queue)

    const other = await createSource({ db, sourcesChanged, input: createSourceSchema.parse({ queue: empty }), actor })
    expect(draining()).toContain(empty)
    await deleteSource({ db, sourcesChanged, id: other.id, actor })
    expect(draining()).not.toContain(empty)
  })
})

/**
 * stop() while a reconcile waits on the database: the reconcile must not start a consumer once stop() has begun (it
 * would never be stopped), and stop() returns only after that reconcile has ended, so nothing of it runs on a closed
 * connection or pool.
 */
describe('a drainer stopped mid-reconcile', () => {
  let db: TestDb
  let connection: ChannelModel
  let locker: pg.Client
  const queue = uniqueName('midstop_dlq')

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    const channel = await connection.createChannel()
    await channel.assertQueue(queue, { durable: true })
    channel.sendToQueue(queue, Buffer.from('{"n":1}'), { messageId: 'midstop-1' })
    await channel.close()
    await createSource({ db, sourcesChanged: new Signal(), input: createSourceSchema.parse({ queue }), actor: 'admin@lazarus.test' })
    locker = new pg.Client({ connectionString: db.url })
    await locker.connect()
  })

  afterAll(async () => {
    await locker?.end().catch(() => {})
    if (connection) {
      const channel = await connection.createChannel()
      await channel.deleteQueue(queue).catch(() => {})
      await connection.close().catch(() => {})
    }
    await db?.drop()
  })

  it('starts no consumer, and stop() returns after the reconcile it interrupted', async () => {
    // The drainer's first reconcile, once connected, reads the sources and blocks behind this lock.
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE sources IN ACCESS EXCLUSIVE MODE')
    const drainer = startDrainer({
      db,
      config: { AMQP_URL, LAZARUS_DRAIN_BATCH: 50, LAZARUS_DRAIN_PREFETCH: 100, LAZARUS_DRAIN_FLUSH_MS: 20, LAZARUS_MAX_BODY_BYTES: 1 << 20 },
      reconcileMs: 600_000,
    })
    await waitFor(async () => {
      // Read outside the locking transaction: pg_stat_activity is a snapshot for the rest of a transaction.
      const { rows } = await db.sql.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM sources WHERE enabled%'")
      return rows.length === 1
    }, { what: "the drainer's reconcile to wait on the sources table" })

    let stopReturned = false
    const stopping = drainer.stop().then(() => (stopReturned = true))
    // Time for stop() to close the broker connection, had it not waited for the reconcile (a round trip each).
    for (let i = 0; i < 5; i++) await locker.query('SELECT 1')
    expect(stopReturned).toBe(false)
    await locker.query('COMMIT')
    await stopping
    expect(drainer.status()).toMatchObject({ state: 'stopped', sources: [] })

    const channel = await connection.createChannel()
    const { consumerCount, messageCount } = await channel.checkQueue(queue)
    await channel.close()
    expect({ consumerCount, messageCount }).toEqual({ consumerCount: 0, messageCount: 1 })
    const { rows } = await db.sql.query<{ stored: number; errors: number }>(
      'SELECT (SELECT count(*)::int FROM dead_letters) AS stored, (SELECT count(*)::int FROM sources WHERE last_error IS NOT NULL) AS errors',
    )
    expect(rows[0]).toEqual({ stored: 0, errors: 0 })
  })
})
