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
