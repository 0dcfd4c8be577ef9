import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'
import { listMessages } from '@/lib/server/messages/list-messages'
import { countMessages } from '@/lib/server/messages/count-messages'
import { indexSearchBacklog, searchBacklogSize } from '@/lib/server/engines/search-indexer/search-index-store'
import { startSearchIndexer } from '@/lib/server/engines/search-indexer/search-indexer'
import { logger } from '@/lib/server/platform/log'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { waitFor } from '../helpers/broker'

let serial = 0
const row = (body: string) =>
  ingestRow({ body: Buffer.from(body), bodyEncoding: 'text', failedAt: new Date(Date.now() - ++serial * 1000), signature: 'v1:search-boom', title: 'Boom' })

describe('search index', () => {
  let db: TestDb
  let sourceId: string

  const search = async (q: string) =>
    (await listMessages({ db, query: listMessagesQuerySchema.parse({ q, limit: '50' }), searchWindow: 5, maxSearchWindow: 5 })).messages.map((m) => m.bodyPreview?.slice(0, 12))

  beforeAll(async () => {
    db = await createTestDb()
    const { rows } = await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('search.dlq') RETURNING id::text`)
    sourceId = rows[0].id
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('each stored batch leaves one backlog range, and duplicates leave none', async () => {
    const batch = [row('deep-0 ' + '.'.repeat(300) + ' needle-at-300'), row('deep-1 ' + '.'.repeat(600) + ' needle-at-600')]
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'search.dlq', rows: batch })
    expect(await searchBacklogSize({ sql: db.sql })).toMatchObject({ ranges: 1 })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'search.dlq', rows: batch })
    expect(await searchBacklogSize({ sql: db.sql })).toMatchObject({ ranges: 1 })
  })

  it('finds terms up to 512 characters into a body, the same before and after indexing', async () => {
    const before = { near: await search('needle-at-300'), far: await search('needle-at-600') }
    expect(before).toEqual({ near: ['deep-0 .....'], far: [] })
    expect(await countMessages({ db, filter: { q: 'needle-at-300' } })).toMatchObject({ count: 1 })
    const result = await indexSearchBacklog({ sql: db.sql })
    expect(result).toMatchObject({ ranges: 1, rows: 2 })
    expect(await searchBacklogSize({ sql: db.sql })).toEqual({ ranges: 0, ids: 0 })
    expect({ near: await search('needle-at-300'), far: await search('needle-at-600') }).toEqual(before)
    expect(await countMessages({ db, filter: { q: 'needle-at-300' } })).toMatchObject({ count: 1 })
  })

  it('concurrent indexers share the backlog without indexing a range twice or missing one', async () => {
    for (let b = 0; b < 20; b++) {
      await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'search.dlq', rows: Array.from({ length: 25 }, (_, i) => row(`par-${b}-${i} shared-term`)) })
    }
    expect((await searchBacklogSize({ sql: db.sql })).ranges).toBe(20)
    const runs = await Promise.all(Array.from({ length: 4 }, async () => {
      let rows = 0
      for (;;) {
        const r = await indexSearchBacklog({ sql: db.sql, ranges: 2 })
        rows += r.rows
        if (r.ranges === 0) return rows
      }
    }))
    expect(runs.reduce((a, b) => a + b, 0)).toBe(500)
    const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letter_search s JOIN dead_letters d ON d.id = s.dead_letter_id WHERE d.body_preview LIKE 'par-%'`)
    expect(rows[0].n).toBe(500)
    expect(await countMessages({ db, filter: { q: 'shared-term' } })).toEqual({ count: 500, estimated: false, method: 'exact' })
  })

  it('overlapping ranges (two batches written at once interleave their ids) index each row once', async () => {
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'search.dlq', rows: Array.from({ length: 10 }, (_, i) => row(`overlap-${i} overlap-term`)) })
    const { rows: [range] } = await db.sql.query<{ first_id: string; last_id: string }>('SELECT first_id::text, last_id::text FROM search_backlog')
    // A second range inside the first, as a concurrently written batch would leave.
    await db.sql.query('INSERT INTO search_backlog (first_id, last_id) VALUES ($1::bigint + 2, $2::bigint - 2)', [range.first_id, range.last_id])
    expect(await indexSearchBacklog({ sql: db.sql })).toMatchObject({ ranges: 2, rows: 10 })
    expect(await countMessages({ db, filter: { q: 'overlap-term' } })).toMatchObject({ count: 10 })
  })

  it('the background indexer catches up with what is stored and stops cleanly', async () => {
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'search.dlq', rows: Array.from({ length: 40 }, (_, i) => row(`bg-${i} background-term`)) })
    const indexer = startSearchIndexer({ db, log: logger('search-test'), idleMs: 20 })
    try {
      await waitFor(async () => (await searchBacklogSize({ sql: db.sql })).ranges === 0 || null, { what: 'backlog indexed' })
      expect(indexer.status()).toEqual({ indexed: 40, lastError: null })
    } finally {
      await indexer.stop()
    }
    const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letter_search WHERE text LIKE '%background-term%'`)
    expect(rows[0].n).toBe(40)
  })
})
