import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { ingestRow } from '../helpers/ingest-row'
import { runRetention } from '@/lib/server/engines/retention/run-retention'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import * as retentionRoute from '@/app/api/settings/retention/route'

const DAY = 86_400_000
const row = (tag: string) => {
  const body = Buffer.from(`{"tag":"${tag}","n":${Math.random()}}`)
  return ingestRow({ body, failedAt: new Date(Date.now() - 90 * DAY), signature: 'v1:retention', title: 'Boom' })
}

describe('retention', () => {
  let db: TestDb
  let groupId: string
  const count = async (where: string) => (await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE ${where}`)).rows[0].n

  beforeAll(async () => {
    db = await createTestDb()
    const sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('retention.dlq') RETURNING id::text`)).rows[0].id
    // 40 of each: dead, held, replayed long ago, resolved long ago, replayed recently, resolved recently.
    for (const tag of ['dead', 'held', 'old-replayed', 'old-resolved', 'new-replayed', 'new-resolved']) {
      await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'retention.dlq', rows: Array.from({ length: 40 }, () => row(tag)) })
    }
    while ((await indexSearchBacklog({ sql: db.sql })).more);
    const set = (tag: string, status: string, daysAgo: number) =>
      db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, status_changed_at, failed_at)
         SELECT id, $2, now() - make_interval(days => $3), failed_at FROM dead_letters WHERE body_preview LIKE $1
         ON CONFLICT (dead_letter_id) DO UPDATE SET status = excluded.status, status_changed_at = excluded.status_changed_at`, [`{"tag":"${tag}"%`, status, daysAgo])
    await set('dead', 'dead', 60)
    await set('held', 'held', 60)
    await set('old-replayed', 'replayed', 31)
    await set('old-resolved', 'resolved', 45)
    await set('new-replayed', 'replayed', 29)
    await set('new-resolved', 'resolved', 1)
    groupId = (await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = 'v1:retention'`)).rows[0].id
    await db.sql.query('UPDATE error_groups SET replayed_count = 80, resolved_count = 80 WHERE id = $1', [groupId])
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('the settings API shows the store and what retention removes next', async () => {
    const response = await retentionRoute.GET(new Request('http://lazarus.test/api/settings/retention', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
    const body = (await response.json()) as any
    expect(response.status).toBe(200)
    expect(body).toMatchObject({ retentionDays: 30, eligibleNow: 80, eligibleWithin24h: 120 })
    expect(body.store.totalBytes).toBeGreaterThan(0)
    expect(body.store.tables.map((t: { name: string }) => t.name)).toContain('dead_letters')
  })

  it('deletes in small batches, oldest first, and stops where it was told to', async () => {
    const first = await runRetention({ db, days: 30, batchSize: 25, maxBatches: 1 })
    expect(first).toMatchObject({ deleted: 25, batches: 1, more: true })
    // The oldest status change goes first: 45 days (resolved) before 31 (replayed).
    expect(await count(`body_preview LIKE '{"tag":"old-resolved"%'`)).toBe(15)
    expect(await count(`body_preview LIKE '{"tag":"old-replayed"%'`)).toBe(40)
  })

  it('removes every replayed and resolved message past the period, never a dead or held one, and keeps counters true', async () => {
    const rest = await runRetention({ db, days: 30, batchSize: 25 })
    expect(rest).toMatchObject({ deleted: 55, more: false })
    expect(await count(`status = 'dead'`)).toBe(40)
    expect(await count(`status = 'held'`)).toBe(40)
    expect(await count(`status = 'replayed'`)).toBe(40)
    expect(await count(`status = 'resolved'`)).toBe(40)
    const { rows } = await db.sql.query<{ count: string; replayed_count: string; resolved_count: string }>('SELECT count, replayed_count, resolved_count FROM error_groups WHERE id = $1', [groupId])
    expect(rows[0]).toEqual({ count: '160', replayed_count: '40', resolved_count: '40' })
    const orphans = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letter_search s WHERE NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.id = s.dead_letter_id)')
    expect(orphans.rows[0].n).toBe(0)
    const { rows: runs } = await db.sql.query<{ deleted: string; error: string | null }>('SELECT deleted, error FROM retention_runs ORDER BY id')
    expect(runs.map((r) => r.deleted)).toEqual(['25', '55'])
  })

  it('two workers running at once delete each row once', async () => {
    await db.sql.query(`UPDATE dead_letter_states SET status_changed_at = now() - interval '40 days' WHERE status IN ('replayed', 'resolved')`)
    const results = await Promise.all([runRetention({ db, days: 30, batchSize: 7 }), runRetention({ db, days: 30, batchSize: 7 })])
    expect(results[0].deleted + results[1].deleted).toBe(80)
    expect(await count('TRUE')).toBe(80)
    const { rows } = await db.sql.query<{ count: string }>('SELECT count FROM error_groups WHERE id = $1', [groupId])
    expect(rows[0].count).toBe('80')
  })

  it('0 days keeps everything', async () => {
    expect(await runRetention({ db, days: 0 })).toMatchObject({ deleted: 0, batches: 0 })
  })
})
