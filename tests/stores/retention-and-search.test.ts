import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closeRetentionRun, deleteExpiredBatch, openRetentionRun } from '@/lib/server/engines/retention/retention-store'
import { indexSearchBacklog, searchBacklogSize } from '@/lib/server/engines/search-indexer/search-index-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, storeRows } from '../helpers/store-seed'

/**
 * The search indexer's store (engines/search-indexer/search-index-store.ts, docs/ARCHITECTURE.md#search-index) and
 * retention's (engines/retention/retention-store.ts) on either engine, pg_trgm's index included on PGlite. Several
 * indexers or retention workers sharing the work through SKIP LOCKED need several connections: PostgreSQL-only
 * (tests/integration/search-index.test.ts, retention.test.ts).
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

const searchRows = async (ids: string[]) =>
  (await db.sql.query<{ id: string; text: string; terms: string[] }>(
    'SELECT dead_letter_id::text AS id, text, terms FROM dead_letter_search WHERE dead_letter_id = ANY($1::bigint[]) ORDER BY dead_letter_id', [ids],
  )).rows

describe('the search index', () => {
  it('indexes the stored ranges oldest first, a few at a time, each message once, and reports how many rows it wrote', async () => {
    // Drain what earlier seeding left, so the counts below are this test's.
    while ((await indexSearchBacklog({ sql: db.sql, ranges: 100 })).more);
    const sourceId = await insertSource(db.sql)
    const first = await storeRows(db.sql, sourceId, [
      { errorType: 'TimeoutException', errorMessage: 'gateway timed out', headersJson: '{"tenant":{"t":"S","v":"acme"}}' },
      { errorType: 'NullPointerException', errorMessage: 'order was null' },
    ])
    const second = await storeRows(db.sql, sourceId, [{ errorType: 'TimeoutException', errorMessage: 'again' }])
    // A range overlapping both, as two batches in flight write them.
    await db.sql.query('INSERT INTO search_backlog (first_id, last_id) VALUES ($1::bigint, $2::bigint)', [first[1], second[0]])
    const width = (from: string, to: string) => Number(to) - Number(from) + 1
    expect(await searchBacklogSize({ sql: db.sql })).toEqual({ ranges: 3, ids: width(first[0], first[1]) + 1 + width(first[1], second[0]) })

    expect(await indexSearchBacklog({ sql: db.sql, ranges: 2 })).toEqual({ ranges: 2, rows: 3, more: true })
    expect(await indexSearchBacklog({ sql: db.sql, ranges: 2 })).toEqual({ ranges: 1, rows: 2, more: false })
    expect(await indexSearchBacklog({ sql: db.sql, ranges: 2 })).toEqual({ ranges: 0, rows: 0, more: false })
    expect(await searchBacklogSize({ sql: db.sql })).toEqual({ ranges: 0, ids: 0 })

    const rows = await searchRows([...first, ...second])
    expect(rows.map((r) => r.id)).toEqual([...first, ...second])
    expect(rows[0].text).toContain('TimeoutException\ngateway timed out')
    expect(rows[0].terms).toContain('h:6:tenant=acme')
    // The trigram index answers a similarity match on either engine.
    const { rows: found } = await db.sql.query<{ id: string }>(`SELECT dead_letter_id::text AS id FROM dead_letter_search WHERE text ILIKE '%timed out%' AND dead_letter_id = ANY($1::bigint[])`, [first])
    expect(found).toEqual([{ id: first[0] }])
  })
})

describe('retention', () => {
  it('deletes replayed and resolved messages changed before the cutoff, oldest first, with their search rows and counters', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, Array.from({ length: 6 }, () => ({ signature: 'v1:retained' })))
    while ((await indexSearchBacklog({ sql: db.sql, ranges: 100 })).more);
    const set = (id: string, status: string, daysAgo: number) =>
      db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, status_changed_at, failed_at)
        SELECT id, $2, now() - make_interval(days => $3), failed_at FROM dead_letters WHERE id = $1::bigint`, [id, status, daysAgo])
    await set(ids[0], 'resolved', 50)
    await set(ids[1], 'replayed', 40)
    await set(ids[2], 'replayed', 35)
    await set(ids[3], 'held', 90)
    await set(ids[4], 'resolved', 1)
    // ids[5] stays dead.
    await db.sql.query(`UPDATE error_groups SET replayed_count = 2, resolved_count = 2 WHERE signature = 'v1:retained'`)
    await db.sql.query(`UPDATE group_source_stats SET replayed_count = 2, resolved_count = 2 WHERE source_id = $1::bigint`, [sourceId])

    const cutoff = new Date(Date.now() - 30 * 86_400_000)
    const runId = await openRetentionRun({ sql: db.sql, cutoff })
    expect(await deleteExpiredBatch({ sql: db.sql, cutoff, batchSize: 2 })).toBe(2)
    const left = async () => (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE source_id = $1::bigint ORDER BY dead_letters.id', [sourceId])).rows.map((r) => r.id)
    expect(await left()).toEqual(ids.slice(2))
    expect(await deleteExpiredBatch({ sql: db.sql, cutoff, batchSize: 2 })).toBe(1)
    expect(await deleteExpiredBatch({ sql: db.sql, cutoff, batchSize: 2 })).toBe(0)
    expect(await left()).toEqual(ids.slice(3))
    expect((await searchRows(ids)).map((r) => r.id)).toEqual(ids.slice(3))
    await closeRetentionRun({ sql: db.sql, runId, deleted: 3 })

    const { rows: group } = await db.sql.query(`SELECT count::int, replayed_count::int, resolved_count::int FROM error_groups WHERE signature = 'v1:retained'`)
    expect(group).toEqual([{ count: 3, replayed_count: 0, resolved_count: 1 }])
    const { rows: perSource } = await db.sql.query('SELECT count::int, replayed_count::int, resolved_count::int FROM group_source_stats WHERE source_id = $1::bigint', [sourceId])
    expect(perSource).toEqual([{ count: 3, replayed_count: 0, resolved_count: 1 }])
    const { rows: run } = await db.sql.query<{ deleted: number; error: string | null; finished: boolean }>(
      'SELECT deleted::int, error, finished_at IS NOT NULL AS finished FROM retention_runs WHERE id = $1::bigint', [runId],
    )
    expect(run).toEqual([{ deleted: 3, error: null, finished: true }])
  })
})
