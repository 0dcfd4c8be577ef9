import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { backfillGroupFrames } from '@/lib/server/engines/group-frames/group-frames-store'
import { ingestRow } from '../helpers/ingest-row'
import { closeTableGate } from '../helpers/table-gate'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * The group frames backfill in several processes at once (docs/ARCHITECTURE.md#a-fleet-what-happens-once): groups are
 * taken off the backlog FOR UPDATE SKIP LOCKED, so backfills running together take each group once, finish the
 * backlog, and never deadlock. PostgreSQL only: it needs several connections (the pool's), which PGlite is not.
 */
describe('group frames backfill, four at once', () => {
  let db: TestDb
  const GROUPS = 400

  beforeAll(async () => {
    db = await createTestDb()
    const sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('frames-many.dlq') RETURNING id::text`)).rows[0].id
    for (let b = 0; b < GROUPS / 100; b++) {
      const rows = Array.from({ length: 100 }, (_, i) => ingestRow({ signature: `v1:frames-${b}-${i}`, title: `Boom ${b}-${i}` }))
      await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'frames-many.dlq', rows })
    }
    await db.sql.query('INSERT INTO group_frames_backlog (group_id) SELECT id FROM error_groups')
  })

  afterAll(async () => {
    await db?.drop()
  })

  it('takes each group once between them and empties the backlog, without a deadlock', async () => {
    // The four start together by construction: the backlog is locked until all four first statements wait on it, so
    // their first rounds overlap however the machine schedules them (a busy one once let a single backfill take
    // everything before the others had started, which proved nothing about concurrency).
    const gate = await closeTableGate(db.url, 'group_frames_backlog')
    let taken: number[]
    try {
      const backfills = Array.from({ length: 4 }, async () => {
        let groups = 0
        for (;;) {
          const round = await backfillGroupFrames({ sql: db.sql, groups: 7 })
          groups += round.groups
          if (!round.more) return groups
        }
      })
      await gate.waiters(4, 'the four backfills waiting on the backlog')
      await gate.release()
      taken = await Promise.all(backfills)
    } finally {
      await gate.release()
    }
    expect(taken.reduce((a, b) => a + b, 0)).toBe(GROUPS)
    // Each took its own groups in the first round (SKIP LOCKED passes over the others'), and no group twice.
    expect(taken.every((n) => n > 0)).toBe(true)
    const { rows } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM group_frames_backlog')
    expect(rows[0].n).toBe(0)
  })
})
