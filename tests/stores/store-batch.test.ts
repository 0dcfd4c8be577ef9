import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { HELD_UNEXPECTED_FLAG } from '@/lib/server/pauses/held-row'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { ingestRow } from '../helpers/ingest-row'
import { insertSource } from '../helpers/store-seed'

/**
 * The drainer's batch store (lib/server/engines/drainer/store-batch.ts, docs/ARCHITECTURE.md#storing-a-batch) on
 * either engine: rows byte for byte, idempotent on the fingerprint, and every counter the batch moves (group, group
 * per source, arrivals per minute, the search backlog, the source's drained count) in the same transaction.
 * Two drainers writing the same groups at once is PostgreSQL-only (PGlite is one connection): the integration tests'.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

type GroupRow = { count: number; sources: string[]; services: string[]; service_versions: string[]; failure_kinds: string[]; status: string; first_seen: Date; last_seen: Date }
const group = async (signature: string) =>
  (await db.sql.query<GroupRow>('SELECT count::int, sources, services, service_versions, failure_kinds, status, first_seen, last_seen FROM error_groups WHERE signature = $1', [signature])).rows[0]

describe('storeBatch', () => {
  it('stores a batch with its group, the counters per group and per source, the arrivals and the search backlog', async () => {
    const sourceId = await insertSource(db.sql, { queue: 'orders.dlq' })
    const minute = new Date('2026-11-30T10:15:00Z')
    const binary = Buffer.from([0xff, 0x00, 0xfe, 0x80])
    const rows = [
      ingestRow({ signature: 'v1:batch', failedAt: new Date(minute.getTime() + 1_000), service: 'orders', serviceVersion: '1.2', failureKind: 'exhausted' }),
      ingestRow({ signature: 'v1:batch', failedAt: new Date(minute.getTime() + 61_000), service: 'billing', serviceVersion: null, failureKind: 'invalid' }),
      ingestRow({ signature: 'v1:batch', failedAt: new Date(minute.getTime() + 62_000), body: binary, bodyEncoding: 'binary', bodyPreview: null, service: null, serviceVersion: null }),
    ]
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows })).toEqual({ inserted: 3, duplicates: 0 })

    const { rows: stored } = await db.sql.query<{ id: string; body: Buffer; body_preview: string | null; seen_count: number; fingerprint: Buffer }>(
      'SELECT id::text, body, body_preview, seen_count, fingerprint FROM dead_letters WHERE source_id = $1::bigint ORDER BY dead_letters.id',
      [sourceId],
    )
    expect(stored.map((r) => Buffer.from(r.body))).toEqual(rows.map((r) => r.body))
    expect(stored.map((r) => Buffer.from(r.fingerprint))).toEqual(rows.map((r) => r.fingerprint))
    expect(stored.map((r) => r.body_preview)).toEqual([rows[0].body.toString(), rows[1].body.toString(), null])
    expect(stored.map((r) => r.seen_count)).toEqual([1, 1, 1])

    expect(await group('v1:batch')).toMatchObject({
      count: 3, sources: ['orders.dlq'], services: ['billing', 'orders'], service_versions: ['1.2'], failure_kinds: ['exhausted', 'invalid'], status: 'open',
      first_seen: new Date(minute.getTime() + 1_000), last_seen: new Date(minute.getTime() + 62_000),
    })
    const { rows: arrivals } = await db.sql.query<{ minute: Date; count: number }>(
      `SELECT a.minute, a.count FROM group_arrivals a JOIN error_groups g ON g.id = a.group_id WHERE g.signature = 'v1:batch' ORDER BY a.minute`,
    )
    expect(arrivals).toEqual([{ minute, count: 1 }, { minute: new Date(minute.getTime() + 60_000), count: 2 }])
    const { rows: perSource } = await db.sql.query<{ count: number; services: string[] }>(
      `SELECT s.count::int, s.services FROM group_source_stats s JOIN error_groups g ON g.id = s.group_id WHERE g.signature = 'v1:batch' AND s.source_id = $1::bigint`,
      [sourceId],
    )
    expect(perSource).toEqual([{ count: 3, services: ['billing', 'orders'] }])
    const { rows: sourceArrivals } = await db.sql.query<{ n: number }>('SELECT sum(count)::int AS n FROM group_source_arrivals WHERE source_id = $1::bigint', [sourceId])
    expect(sourceArrivals[0].n).toBe(3)
    const { rows: backlog } = await db.sql.query<{ first_id: string; last_id: string }>('SELECT first_id::text, last_id::text FROM search_backlog ORDER BY id DESC LIMIT 1')
    expect(backlog).toEqual([{ first_id: stored[0].id, last_id: stored[2].id }])
    const { rows: source } = await db.sql.query<{ drained_count: number; last_drain_at: Date | null }>('SELECT drained_count::int, last_drain_at FROM sources WHERE id = $1::bigint', [sourceId])
    expect(source[0].drained_count).toBe(3)
    expect(source[0].last_drain_at).not.toBeNull()
  })

  it('stores a batch larger than one statement\'s 65,535 parameters (LAZARUS_DRAIN_BATCH allows 5,000) in one transaction, counters once per group and minute', async () => {
    const sourceId = await insertSource(db.sql, { queue: 'big.dlq' })
    const minute = new Date('2026-11-30T11:00:00Z')
    // Rows of two groups over three minutes, interleaved, so every statement of the batch holds every (group, minute).
    const rows = Array.from({ length: 4_000 }, (_, i) =>
      ingestRow({ signature: i % 2 ? 'v1:big-a' : 'v1:big-b', failedAt: new Date(minute.getTime() + (i % 3) * 60_000 + 1_000), service: i % 2 ? 'orders' : 'billing' }),
    )
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'big.dlq', rows })).toEqual({ inserted: 4_000, duplicates: 0 })
    expect(await group('v1:big-a')).toMatchObject({ count: 2_000, services: ['orders'] })
    expect(await group('v1:big-b')).toMatchObject({ count: 2_000, services: ['billing'] })
    const { rows: arrivals } = await db.sql.query<{ signature: string; minute: Date; count: number }>(
      `SELECT g.signature, a.minute, a.count FROM group_arrivals a JOIN error_groups g ON g.id = a.group_id WHERE g.signature LIKE 'v1:big-%' ORDER BY 1, 2`,
    )
    expect(arrivals.map((a) => a.count).reduce((x, y) => x + y, 0)).toBe(4_000)
    expect(arrivals).toHaveLength(6)
    const { rows: ids } = await db.sql.query<{ min: string; max: string }>('SELECT min(id)::text AS min, max(id)::text AS max FROM dead_letters WHERE source_id = $1::bigint', [sourceId])
    const { rows: backlog } = await db.sql.query<{ first_id: string; last_id: string }>('SELECT first_id::text, last_id::text FROM search_backlog ORDER BY id DESC LIMIT 1')
    expect(backlog).toEqual([{ first_id: ids[0].min, last_id: ids[0].max }])
    const { rows: source } = await db.sql.query<{ drained_count: number }>('SELECT drained_count::int FROM sources WHERE id = $1::bigint', [sourceId])
    expect(source[0].drained_count).toBe(4_000)
  })

  it('takes a redelivered batch as the rows it already has: nothing stored twice, no counter moved', async () => {
    const sourceId = await insertSource(db.sql)
    const rows = [ingestRow({ signature: 'v1:redelivered' }), ingestRow({ signature: 'v1:redelivered' })]
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows })
    const again = rows.map((r) => ({ ...r, redelivered: true }))
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: again })).toEqual({ inserted: 0, duplicates: 2 })
    const { rows: stored } = await db.sql.query<{ seen_count: number }>('SELECT seen_count FROM dead_letters WHERE source_id = $1::bigint', [sourceId])
    expect(stored).toEqual([{ seen_count: 1 }, { seen_count: 1 }])
    expect((await group('v1:redelivered')).count).toBe(2)
    const { rows: source } = await db.sql.query<{ drained_count: number }>('SELECT drained_count::int FROM sources WHERE id = $1::bigint', [sourceId])
    expect(source[0].drained_count).toBe(2)
  })

  it('counts the same bytes sent again, and twice in one batch, as seen again rather than as new rows', async () => {
    const sourceId = await insertSource(db.sql)
    const row = ingestRow({ signature: 'v1:seen-again' })
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [row, { ...row }] })).toEqual({ inserted: 1, duplicates: 1 })
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [{ ...row }] })).toEqual({ inserted: 0, duplicates: 1 })
    const { rows: stored } = await db.sql.query<{ seen_count: number }>('SELECT seen_count FROM dead_letters WHERE source_id = $1::bigint', [sourceId])
    expect(stored).toEqual([{ seen_count: 3 }])
    expect((await group('v1:seen-again')).count).toBe(1)
  })

  it('reopens a resolved group when a new failure of it arrives, and leaves a muted one muted', async () => {
    const sourceId = await insertSource(db.sql)
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [ingestRow({ signature: 'v1:reopens' }), ingestRow({ signature: 'v1:stays-muted' })] })
    await db.sql.query(`UPDATE error_groups SET status = CASE signature WHEN 'v1:reopens' THEN 'resolved' ELSE 'muted' END WHERE signature IN ('v1:reopens', 'v1:stays-muted')`)
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [ingestRow({ signature: 'v1:reopens' }), ingestRow({ signature: 'v1:stays-muted' })] })
    expect((await group('v1:reopens')).status).toBe('open')
    expect((await group('v1:stays-muted')).status).toBe('muted')
  })

  it('writes held rows with their status rows, flagging the ones no pause explains, and rows of two statuses each with its own', async () => {
    const hold = await insertSource(db.sql, { queue: 'lazarus.hold.store-test', kind: 'hold' })
    await db.sql.query(
      `INSERT INTO pauses (vhost, queue, entity_key, status, created_by, version) VALUES ('/', 'orders', 'order-1', 'active', 'test', nextval('pause_registry_version'))`,
    )
    const held = (entityKey: string) => ingestRow({ signature: 'lazarus:held', status: 'held', heldFrom: 'orders', entityKey })
    const dead = ingestRow({ signature: 'v1:beside-held' })
    expect(await storeBatch({ sql: db.sql, sourceId: hold, sourceLabel: 'hold', rows: [held('order-1'), held('order-2'), dead] })).toEqual({ inserted: 3, duplicates: 0 })
    const { rows } = await db.sql.query<{ entity_key: string | null; status: string; flags: string[] }>(
      `SELECT d.entity_key, coalesce(st.status, 'dead') AS status, d.flags FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id
       WHERE d.source_id = $1::bigint ORDER BY d.entity_key NULLS LAST`,
      [hold],
    )
    expect(rows).toEqual([
      { entity_key: 'order-1', status: 'held', flags: [] },
      { entity_key: 'order-2', status: 'held', flags: [HELD_UNEXPECTED_FLAG] },
      { entity_key: null, status: 'dead', flags: [] },
    ])
  })

  it('stores nothing of a batch PostgreSQL refuses, and forgets the group it created in the attempt', async () => {
    const sourceId = await insertSource(db.sql)
    // Properties that are not JSON: the INSERT fails after the batch's transaction created its group.
    const refused = ingestRow({ signature: 'v1:rolled-back', propertiesJson: '{not json' })
    await expect(storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [refused] })).rejects.toThrow(/json/i)
    expect(await group('v1:rolled-back')).toBeUndefined()
    // The next batch of that signature creates the group afresh rather than pointing at the one rolled back.
    expect(await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'q', rows: [ingestRow({ signature: 'v1:rolled-back' })] })).toEqual({ inserted: 1, duplicates: 0 })
    expect((await group('v1:rolled-back')).count).toBe(1)
  })
})
