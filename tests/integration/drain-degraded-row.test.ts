import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { degradeRow } from '@/lib/server/engines/drainer/store-batch-or-degrade'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { getMessage } from '@/lib/server/messages/get-message'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * The drainer's last resort: a row PostgreSQL refuses for its content is stored degraded rather than blocking the
 * queue or being acked unstored. Real deliveries cannot produce such a row (the builder escapes what PostgreSQL
 * rejects), so the refusal is forced here with what jsonb does reject: a lone surrogate escape.
 */
describe('a row PostgreSQL refuses for its content', () => {
  let db: TestDb
  let sourceId: string

  beforeAll(async () => {
    db = await createTestDb()
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('degraded.dlq') RETURNING id::text`)).rows[0].id
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('a batch that rolled back after creating its new error group does not poison later batches of that group', async () => {
    const signature = 'v1:rolled-back-group'
    const refused = ingestRow({ signature, title: 'Rolled back', propertiesJson: '{"messageId":"\\ud800"}', failedAt: new Date() })
    await expect(storeBatch({ sql: db.sql, sourceId, sourceLabel: 'degraded.dlq', rows: [refused] })).rejects.toThrow(/json/i)
    const valid = ingestRow({ signature, title: 'Rolled back', failedAt: new Date() })
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'degraded.dlq', rows: [valid] })).toEqual({ inserted: 1, duplicates: 0 })
    const { rows } = await db.sql.query<{ count: number }>('SELECT count::int FROM error_groups WHERE signature = $1', [signature])
    expect(rows).toEqual([{ count: 1 }])
  })

  it('is stored degraded: exact body, original headers kept as bytes, flagged with the reason, readable through the API', async () => {
    const headersJson = JSON.stringify({ 'x-error-type': { t: 'S', v: 'com.acme.Boom' } })
    const row = ingestRow({ body: Buffer.from('{"order":42}'), propertiesJson: '{"messageId":"\\ud800"}', headersJson, failedAt: new Date() })
    const refusal = await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'degraded.dlq', rows: [row] }).then(
      () => null,
      (error: Error) => error,
    )
    expect(refusal?.message).toMatch(/json/i)

    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'degraded.dlq', rows: [degradeRow(row, refusal!)] })
    const { rows } = await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE 'stored-degraded' = ANY(flags)`)
    const message = await getMessage({ db, id: rows[0].id })
    expect(message.flags).toEqual(expect.arrayContaining(['stored-degraded', expect.stringMatching(/^store-error: .*json/i)]))
    expect(message.headersTyped).toEqual({ 'x-lazarus-unstorable-headers': { t: 'x', b64: Buffer.from(headersJson).toString('base64') } })
    expect(message.properties).toEqual({})
    const { rows: stored } = await db.sql.query<{ body: Buffer }>('SELECT body FROM dead_letters WHERE id = $1::bigint', [rows[0].id])
    expect(stored[0].body.equals(Buffer.from('{"order":42}'))).toBe(true)
  })
})
