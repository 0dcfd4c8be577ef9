import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { encodeTypedTable, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { storagePerMessage } from '@/lib/bench/storage-per-message'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/** bench:drain's storage report (lib/bench/storage-per-message.ts), on a database whose contents the test knows. */
describe("the drain bench's storage per message", () => {
  let db: TestDb
  const headers: TypedTable = { 'x-exception-message': { t: 'S', v: 'SKU 1 out of stock' }, 'retry-count': { t: 'l', v: '3' } }
  const body = Buffer.from(JSON.stringify({ orderId: 'order-1', pad: 'x'.repeat(400) }))

  beforeAll(async () => {
    db = await createTestDb()
    const { rows } = await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('storage.dlq') RETURNING id::text`)
    await storeBatch({
      sql: db.sql,
      sourceId: rows[0].id,
      sourceLabel: 'storage.dlq',
      rows: Array.from({ length: 200 }, () => ingestRow({ body, headersJson: JSON.stringify(headers), propertiesJson: JSON.stringify({ contentType: 'application/json', priority: 5 }) })),
    })
  })
  afterAll(async () => db?.drop())

  it("adds up every relation per message, the search copy indexed first, beside the messages' own bytes", async () => {
    const report = await storagePerMessage({ url: db.url })
    expect(report.messages).toBe(200)
    // Own bytes: the body, the header table as AMQP encodes it, the property values (a string's bytes, a number as 8).
    expect(report.ownBytesPerMessage).toBe(body.length + encodeTypedTable(headers).length + 'application/json'.length + 8)
    const names = report.parts.map((p) => p.name)
    expect(names).toEqual(expect.arrayContaining(['dead_letters', 'dead_letters › dead_letters_pkey', 'dead_letter_search', 'dead_letter_search › dead_letter_search_trgm_idx']))
    expect(report.perMessage).toBeCloseTo(report.parts.reduce((sum, p) => sum + p.bytesPerMessage, 0), 6)
    // Largest first; a page of heap holds a few of these rows, so the table costs at least the body per message.
    expect(report.parts.map((p) => p.bytesPerMessage)).toEqual([...report.parts.map((p) => p.bytesPerMessage)].sort((a, b) => b - a))
    expect(report.parts.find((p) => p.name === 'dead_letters')!.bytesPerMessage).toBeGreaterThan(body.length)
    const { rows } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM search_backlog')
    expect(rows[0].n).toBe(0)
  })
})
