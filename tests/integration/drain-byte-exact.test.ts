import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { encodeTypedTable, withTypedHeaders, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { b64, EVERY_BROKER_TYPE } from '../helpers/typed-headers'
import { drainQueues, storedCount } from '../helpers/drainer'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'

const everyType: TypedTable = {
  'zz-key-order-kept': { t: 'S', v: 'first in the table' },
  ...EVERY_BROKER_TYPE,
  'int64-min': { t: 'l', v: '-9223372036854775808' },
  'double-neg-zero': { t: 'd', v: '-0' },
  'longstr-with-nul': { t: 'S', b64: b64(Buffer.from('a\u0000b')) },
  'x-death': {
    t: 'A',
    v: [{ t: 'F', v: { count: { t: 'l', v: '4' }, exchange: { t: 'S', v: 'app' }, queue: { t: 'S', v: 'app.work' }, reason: { t: 'S', v: 'rejected' }, 'routing-keys': { t: 'A', v: [{ t: 'S', v: 'a.b' }] }, time: { t: 'T', v: '1764500000' } } }],
  },
}

const bodies: Record<string, Buffer> = {
  'random binary': randomBytes(4096),
  'non-UTF-8 text': Buffer.from([0x48, 0x69, 0x20, 0xe9, 0x74, 0xe9, 0x20, 0xff]),
  empty: Buffer.alloc(0),
  '1 MiB': randomBytes(1024 * 1024),
  '16 MiB': randomBytes(16 * 1024 * 1024),
  'malformed JSON': Buffer.from('{"orderId": "o-1", '),
  'NUL bytes in text': Buffer.from('abc\u0000def'),
}

describe('byte-exact storage', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  const dlq = uniqueName('exact_dlq')
  let sourceId: string

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertQueue(dlq, { durable: false })
    for (const [name, body] of Object.entries(bodies)) {
      channel.sendToQueue(dlq, body, { messageId: name, headers: withTypedHeaders(everyType), priority: 3, timestamp: 1764500000, type: 'exact.test', correlationId: 'c-1' })
    }
    ;({ drainer, sourceIds: { [dlq]: sourceId } } = await drainQueues(db, [dlq], { batch: 3 }))
    await waitFor(async () => (await storedCount(db.sql, sourceId)) === Object.keys(bodies).length || null, { what: 'all stored', timeoutMs: 60_000 })
  })

  afterAll(async () => {
    await drainer?.stop()
    await channel?.deleteQueue(dlq).catch(() => {})
    await connection?.close()
    await db?.drop()
  })

  for (const [name, body] of Object.entries(bodies)) {
    it(`keeps the ${name} body and every typed header exactly`, async () => {
      const { rows } = await db.sql.query<{ body: Uint8Array; body_size: number; headers: TypedTable; properties: Record<string, unknown>; flags: string[] }>(
        'SELECT body, body_size, headers, properties, flags FROM dead_letters WHERE properties->>\'messageId\' = $1',
        [name],
      )
      expect(rows).toHaveLength(1)
      expect(Buffer.from(rows[0].body).equals(body)).toBe(true)
      expect(rows[0].body_size).toBe(body.length)
      // Same values, same types, same key order: re-encoding gives the bytes the publisher sent.
      expect(JSON.stringify(rows[0].headers)).toBe(JSON.stringify(everyType))
      expect(encodeTypedTable(rows[0].headers).equals(encodeTypedTable(everyType))).toBe(true)
      expect(rows[0].properties).toMatchObject({ priority: 3, timestamp: 1764500000, type: 'exact.test', correlationId: 'c-1' })
    })
  }

  it('flags malformed JSON bodies', async () => {
    const { rows } = await db.sql.query<{ flags: string[]; body_encoding: string }>(`SELECT flags, body_encoding FROM dead_letters WHERE properties->>'messageId' = 'malformed JSON'`)
    expect(rows[0]).toMatchObject({ body_encoding: 'text' })
    expect(rows[0].flags).toContain('malformed-json')
  })
})
