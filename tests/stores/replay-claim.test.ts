import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { claimItems, claimJob, lastSeq, pollJob, recordOutcomes, releaseLease, renewLease, setJobError } from '@/lib/server/engines/replay-executor/job-store'
import { finishJob, requestCancel } from '@/lib/server/replay/replay-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { jobState } from '../helpers/replay'
import { insertSource, replayJobOf, statusesOf, storeRows } from '../helpers/store-seed'

/**
 * The replay executor's store (lib/server/engines/replay-executor/job-store.ts) on either engine: a job is claimed
 * under a lease, renewed, handed back or taken over once the lease expired; its items are claimed in publish order
 * under the claimed_through mark, and outcomes move items, messages and counters together.
 * Two executors claiming at once (FOR UPDATE SKIP LOCKED between connections) is PostgreSQL-only, since PGlite is one
 * connection: tests/integration/replay-crash-safety.test.ts and replay-loop.test.ts run several on one database.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

const LEASE = 60_000
let sourceId: string
let signature: string
let ids: string[]
beforeEach(async () => {
  // Only this test's jobs are claimable: earlier tests' are finished out of the way.
  await db.sql.query(`UPDATE replay_jobs SET status = 'completed' WHERE status IN ('pending', 'running')`)
  sourceId = await insertSource(db.sql)
  signature = `v1:claim-${sourceId}`
  ids = await storeRows(db.sql, sourceId, [1, 2, 3, 4].map((n) => ({ originQueue: 'orders', body: Buffer.alloc(100 * n, n), signature })))
})

describe('claimJob and its lease', () => {
  it('claims the oldest runnable job for one owner until its lease expires, and then lets another take it over', async () => {
    const first = (await replayJobOf(db.sql, ids.slice(0, 2))).jobId
    const second = (await replayJobOf(db.sql, ids.slice(2))).jobId
    const a = await claimJob({ sql: db.sql, owner: 'worker-a', leaseMs: LEASE, skip: [] })
    expect(a).toMatchObject({ id: first, kind: 'replay', status: 'running', created_by: 'store-test', run_failures: 0, staged: false })
    // The first is leased: the next claim takes the second, and then there is nothing left.
    expect((await claimJob({ sql: db.sql, owner: 'worker-b', leaseMs: LEASE, skip: [] }))?.id).toBe(second)
    expect(await claimJob({ sql: db.sql, owner: 'worker-c', leaseMs: LEASE, skip: [] })).toBeNull()

    await db.sql.query(`UPDATE replay_jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1::bigint`, [first])
    expect(await claimJob({ sql: db.sql, owner: 'worker-c', leaseMs: LEASE, skip: [first] })).toBeNull()
    expect((await claimJob({ sql: db.sql, owner: 'worker-c', leaseMs: LEASE, skip: [] }))?.id).toBe(first)
    // worker-a lost it: its heartbeat says so, and what it writes under its old lease goes nowhere.
    expect(await renewLease({ sql: db.sql, jobId: first, owner: 'worker-a', leaseMs: LEASE, rate: 5 })).toEqual({ mine: false, cancel: false })
    await setJobError({ sql: db.sql, jobId: first, owner: 'worker-a', error: 'stale' })
    expect((await jobState(db.sql, first)).error).toBeNull()
    expect(await renewLease({ sql: db.sql, jobId: first, owner: 'worker-c', leaseMs: LEASE, rate: 5 })).toEqual({ mine: true, cancel: false })
    expect(await pollJob({ sql: db.sql, jobId: first, owner: 'worker-c' })).toEqual({ mine: true, cancel: false })
  })

  it('reports a cancel request through the heartbeat, and skips a job whose not_before has not come', async () => {
    const { jobId } = await replayJobOf(db.sql, ids)
    await db.sql.query(`UPDATE replay_jobs SET not_before = now() + interval '1 hour' WHERE id = $1::bigint`, [jobId])
    expect(await claimJob({ sql: db.sql, owner: 'w', leaseMs: LEASE, skip: [] })).toBeNull()
    await db.sql.query(`UPDATE replay_jobs SET not_before = now() - interval '1 second' WHERE id = $1::bigint`, [jobId])
    expect((await claimJob({ sql: db.sql, owner: 'w', leaseMs: LEASE, skip: [] }))?.id).toBe(jobId)
    await requestCancel({ sql: db.sql, id: jobId, actor: 'ops' })
    expect(await renewLease({ sql: db.sql, jobId, owner: 'w', leaseMs: LEASE, rate: null })).toEqual({ mine: true, cancel: true })
    expect(await pollJob({ sql: db.sql, jobId, owner: 'other' })).toEqual({ mine: false, cancel: true })
  })

  it('hands a lease back at once, counting a failed run, and finishes a job only for its lease holder', async () => {
    const { jobId } = await replayJobOf(db.sql, ids)
    await claimJob({ sql: db.sql, owner: 'w', leaseMs: LEASE, skip: [] })
    await releaseLease({ sql: db.sql, jobId, owner: 'w', error: 'broker gone', failed: true })
    const again = await claimJob({ sql: db.sql, owner: 'v', leaseMs: LEASE, skip: [] })
    expect(again).toMatchObject({ id: jobId, status: 'running', run_failures: 1 })
    expect((await jobState(db.sql, jobId)).error).toBe('broker gone')
    expect(await finishJob({ sql: db.sql, jobId, owner: 'w', status: 'completed' })).toBeNull()
    expect(await finishJob({ sql: db.sql, jobId, owner: 'v', status: 'completed' })).toMatchObject({ id: jobId, status: 'completed', total: 4 })
    expect(await claimJob({ sql: db.sql, owner: 'v', leaseMs: LEASE, skip: [] })).toBeNull()
  })
})

describe('claimItems and recordOutcomes', () => {
  const claim = (jobId: string, afterSeq: number, limit: number, maxBytes = 1 << 20) => claimItems({ sql: db.sql, jobId, afterSeq, span: 1000, limit, maxBytes })
  const claimedThrough = async (jobId: string) =>
    (await db.sql.query<{ n: number }>('SELECT claimed_through AS n FROM replay_jobs WHERE id = $1::bigint', [jobId])).rows[0].n

  it('takes items in publish order with their messages, within a byte budget, and raises the claimed_through mark only', async () => {
    const { jobId, taken } = await replayJobOf(db.sql, ids)
    expect(taken).toBe(4)
    expect(await lastSeq({ sql: db.sql, jobId })).toBe(4)
    // An item comes while fewer than 250 body bytes came before it (the third has 300 before it); at least one always comes.
    const items = await claim(jobId, 0, 10, 250)
    expect(items.map((i) => [i.seq, i.dead_letter_id, i.body.length, i.row_status, i.routing_key])).toEqual([
      [1, ids[0], 100, 'replaying', 'orders'],
      [2, ids[1], 200, 'replaying', 'orders'],
    ])
    expect(Buffer.from(items[0].body)).toEqual(Buffer.alloc(100, 1))
    expect(await claimedThrough(jobId)).toBe(2)
    expect((await claim(jobId, 2, 10, 1)).map((i) => i.seq)).toEqual([3])
    // A claim from the start (a restarted run) takes the open items again and never lowers the mark.
    expect((await claim(jobId, 0, 10)).map((i) => i.seq)).toEqual([1, 2, 3, 4])
    await claim(jobId, 0, 1)
    expect(await claimedThrough(jobId)).toBe(4)
    const { rows } = await db.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint GROUP BY 1', [jobId])
    expect(rows).toEqual([{ status: 'pending', n: 4 }])
  })

  it('records outcomes: items closed, messages replayed or back to dead with the reason, job and group counters moved', async () => {
    const { jobId } = await replayJobOf(db.sql, ids)
    const items = await claim(jobId, 0, 10)
    const sentAt = Date.parse('2026-11-30T12:00:00.250Z')
    const outcome = (i: number, status: 'confirmed' | 'unroutable' | 'failed' | 'skipped', error: string | null, publishedAt?: number) => ({
      seq: items[i].seq, groupId: items[i].group_id, sourceId: items[i].source_id, status, error, publishedAt,
    })
    await recordOutcomes({
      sql: db.sql, jobId, actor: 'executor', rate: 12.5,
      outcomes: [outcome(0, 'confirmed', null, sentAt), outcome(1, 'confirmed', null, sentAt), outcome(2, 'unroutable', 'no route', sentAt), outcome(3, 'skipped', 'not published: test')],
    })
    expect(await jobState(db.sql, jobId)).toMatchObject({ published: 3, confirmed: 2, unroutable: 1, skipped: 1, failed: 0 })
    expect(await statusesOf(db.sql, ids)).toEqual(['replayed', 'replayed', 'dead', 'dead'])
    const { rows: reasons } = await db.sql.query<{ status_reason: string | null }>('SELECT status_reason FROM dead_letter_states WHERE dead_letter_id = ANY($1::bigint[]) ORDER BY dead_letter_id', [ids])
    expect(reasons.map((r) => r.status_reason)).toEqual([null, null, 'no route', 'not published: test'])
    const { rows: items2 } = await db.sql.query<{ status: string; published_at: Date | null }>('SELECT status, published_at FROM replay_items WHERE job_id = $1::bigint ORDER BY seq', [jobId])
    expect(items2.map((i) => [i.status, i.published_at?.toISOString() ?? null])).toEqual([
      ['confirmed', '2026-11-30T12:00:00.250Z'], ['confirmed', '2026-11-30T12:00:00.250Z'], ['unroutable', '2026-11-30T12:00:00.250Z'], ['skipped', null],
    ])
    const { rows: counters } = await db.sql.query<{ group: number; per_source: number }>(
      `SELECT g.replayed_count::int AS group, s.replayed_count::int AS per_source FROM error_groups g JOIN group_source_stats s ON s.group_id = g.id AND s.source_id = $1::bigint
       WHERE g.signature = $2`,
      [sourceId, signature],
    )
    expect(counters).toEqual([{ group: 2, per_source: 2 }])

    // An outcome recorded twice (a retried batch) changes nothing the second time.
    await recordOutcomes({ sql: db.sql, jobId, actor: 'executor', rate: null, outcomes: [outcome(0, 'confirmed', null, sentAt)] })
    expect(await jobState(db.sql, jobId)).toMatchObject({ published: 3, confirmed: 2 })
    expect((await claim(jobId, 0, 10)).map((i) => i.seq)).toEqual([])
  })
})
