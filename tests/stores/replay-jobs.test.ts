import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  approveJob, countArrived, endWaitingJob, freezeItems, lockExpiredJobs, lockJobForDecision, recordWaitingState,
} from '@/lib/server/replay/approval-store'
import {
  closeOpenItems, findItemByReplayId, freezeJobPlan, insertReplayJob, jobVisible, lockJobForCancel, markItemSuperseded, recordJobSources,
  resolveSupersededMessages, selectItemPage, selectJob, selectJobEntities, selectJobPage, takeMessagesIntoJob,
} from '@/lib/server/replay/replay-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { jobState } from '../helpers/replay'
import { insertSource, PLAN, plannedIds, replayJobOf, statusesOf, storeRows } from '../helpers/store-seed'

/**
 * The replay store as the API uses it (lib/server/replay/replay-store.ts, approval-store.ts) on either engine:
 * creating a job takes its messages (WITH … INSERT, counted by execute), a waiting job only freezes items, and reads,
 * cancels and ends see what the writes did. Two jobs taking the same messages at once (the upsert's re-check under
 * the row lock) needs two connections: PostgreSQL-only, in tests/integration/replay-api.test.ts.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())

describe('creating a job', () => {
  it('takes the dead messages of the plan into items in publish order, and counts only those it took', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [
      { originQueue: 'orders', firstDeathAt: new Date('2026-11-30T10:00:03Z') },
      { originQueue: 'orders', firstDeathAt: new Date('2026-11-30T10:00:01Z') },
      { originQueue: 'billing', firstDeathAt: new Date('2026-11-30T10:00:02Z') },
      { originQueue: 'orders', firstDeathAt: new Date('2026-11-30T10:00:00Z') },
    ])
    // The last message is resolved already: the job leaves it.
    await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at) SELECT id, 'resolved', failed_at FROM dead_letters WHERE id = $1::bigint`, [ids[3]])
    const { jobId, taken } = await replayJobOf(db.sql, ids)
    expect(taken).toBe(3)
    expect(await statusesOf(db.sql, ids)).toEqual(['replaying', 'replaying', 'replaying', 'resolved'])
    const items = await selectItemPage({ sql: db.sql, jobId, afterSeq: 0, limit: 10 })
    expect(items.map((i) => [i.seq, i.dead_letter_id, i.status, i.routing_key])).toEqual([
      [1, ids[1], 'pending', 'orders'], [2, ids[2], 'pending', 'billing'], [3, ids[0], 'pending', 'orders'],
    ])
    // A second job over the same messages finds none of them dead: it takes nothing, and says so.
    const second = await insertReplayJob({ sql: db.sql, job: { status: 'pending', selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor: 'other' } })
    expect(await takeMessagesIntoJob({ sql: db.sql, planned: plannedIds(ids), jobId: second, actor: 'other' })).toBe(0)

    await freezeJobPlan({ sql: db.sql, jobId, total: 3, plan: { ...PLAN, replayable: 3 } })
    const job = await selectJob({ sql: db.sql, id: jobId })
    expect(job).toMatchObject({ id: jobId, kind: 'replay', status: 'pending', total: 3, created_by: 'store-test', target: { type: 'queue' }, selection: { ids } })
    expect(job?.plan.replayable).toBe(3)
    // A caller limited to other sources does not see it; one limited to its source does.
    expect(await jobVisible({ sql: db.sql, id: jobId, sourceIds: [sourceId] })).toBe(true)
    expect(await jobVisible({ sql: db.sql, id: jobId, sourceIds: [String(BigInt(sourceId) + 1000n)] })).toBe(false)
    expect(await selectJob({ sql: db.sql, id: jobId, sourceIds: [String(BigInt(sourceId) + 1000n)] })).toBeUndefined()
  })

  it('lists the (queue, entity) pairs a job would pause, of its open items only when asked', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [
      { originQueue: 'orders', entityKey: 'o-1' }, { originQueue: 'orders', entityKey: 'o-1' }, { originQueue: 'orders', entityKey: 'o-2' }, { originQueue: 'orders', entityKey: null },
    ])
    const { jobId } = await replayJobOf(db.sql, ids)
    await db.sql.query(`UPDATE replay_items SET status = 'confirmed' WHERE job_id = $1::bigint AND dead_letter_id = $2::bigint`, [jobId, ids[2]])
    const pairs = (all: boolean) => selectJobEntities({ sql: db.sql, jobId, openOnly: !all }).then((rows) => rows.map((r) => `${r.queue}/${r.entity_key}`).sort())
    expect(await pairs(true)).toEqual(['orders/o-1', 'orders/o-2'])
    expect(await pairs(false)).toEqual(['orders/o-1'])
  })
})

describe('reading jobs', () => {
  it('pages jobs newest first by their created_at cursor, by status, and shows items at or below claimed_through in flight', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{}, {}, {}, {}])
    const jobs: string[] = []
    for (const id of ids) jobs.push((await replayJobOf(db.sql, [id])).jobId)
    await db.sql.query(`UPDATE replay_jobs SET status = 'completed' WHERE id = $1::bigint`, [jobs[1]])
    const page = (cursor: { at: string; id: string } | null, status?: string) => selectJobPage({ sql: db.sql, sourceIds: [sourceId], status, cursor, limit: 2 })
    const first = await page(null)
    expect(first.map((j) => j.id)).toEqual([jobs[3], jobs[2]])
    const last = first[first.length - 1]
    expect((await page({ at: last.created_at_text, id: last.id })).map((j) => j.id)).toEqual([jobs[1], jobs[0]])
    expect((await page(null, 'completed')).map((j) => j.id)).toEqual([jobs[1]])

    const { jobId } = await replayJobOf(db.sql, (await storeRows(db.sql, sourceId, [{}, {}, {}])))
    await db.sql.query('UPDATE replay_jobs SET claimed_through = 2 WHERE id = $1::bigint', [jobId])
    expect((await selectItemPage({ sql: db.sql, jobId, afterSeq: 0, limit: 10 })).map((i) => i.status)).toEqual(['in_flight', 'in_flight', 'pending'])
    expect((await selectItemPage({ sql: db.sql, jobId, afterSeq: 0, limit: 10, status: 'pending' })).map((i) => i.seq)).toEqual([3])
    expect((await selectItemPage({ sql: db.sql, jobId, afterSeq: 1, limit: 1 })).map((i) => i.seq)).toEqual([2])
  })
})

describe('ending a job', () => {
  it('closes the open items of a cancelled job and sends their messages back to dead with the reason', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{}, {}, {}])
    const { jobId } = await replayJobOf(db.sql, ids)
    await db.sql.query(`UPDATE replay_items SET status = 'confirmed' WHERE job_id = $1::bigint AND seq = 1`, [jobId])
    await db.sql.query(`UPDATE dead_letter_states SET status = 'replayed' WHERE dead_letter_id = $1::bigint`, [ids[0]])
    const locked = await db.sql.transaction((tx) => lockJobForCancel({ sql: tx, id: jobId, sourceIds: null }))
    expect(locked).toMatchObject({ kind: 'replay', status: 'pending', cancel_requested_at: null, unleased: true, pauses: 0, total: 3 })
    expect(await closeOpenItems({ sql: db.sql, jobId, actor: 'ops', status: 'cancelled', reason: 'cancelled by ops', kinds: ['replay'] })).toBe(2)
    expect(await statusesOf(db.sql, ids)).toEqual(['replayed', 'dead', 'dead'])
    expect((await jobState(db.sql, jobId)).cancelled).toBe(2)
    expect(await closeOpenItems({ sql: db.sql, jobId, actor: 'ops', status: 'cancelled', reason: 'again', kinds: ['replay'] })).toBe(0)
    expect((await jobState(db.sql, jobId)).cancelled).toBe(2)
  })

  it('resolves the older versions of an entity the job replays at a newer one, and no message another job holds', async () => {
    const sourceId = await insertSource(db.sql, { entityVersion: { kind: 'jsonPointer', pointer: '/version', type: 'number' } })
    const ids = await storeRows(db.sql, sourceId, [
      { entityKey: 'o-1', entityVersion: 1 }, { entityKey: 'o-1', entityVersion: 2 }, { entityKey: 'o-1', entityVersion: 3 }, { entityKey: 'o-2', entityVersion: 1 },
    ])
    const { jobId } = await replayJobOf(db.sql, [ids[2], ids[3]])
    const moved = await resolveSupersededMessages({ sql: db.sql, jobId, ids: [ids[0], ids[1]], actor: 'ops' })
    expect(moved).toEqual([{ group_id: expect.any(String), source_id: sourceId, n: 2 }])
    expect(await statusesOf(db.sql, ids)).toEqual(['resolved', 'resolved', 'replaying', 'replaying'])
    const { rows } = await db.sql.query<{ status_reason: string }>('SELECT status_reason FROM dead_letter_states WHERE dead_letter_id = $1::bigint', [ids[0]])
    expect(rows[0].status_reason).toBe('superseded by version 3')
  })

  it('finds an item by the replay id it published, and records a guard’s newer version on it once per version', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{ originQueue: 'orders' }])
    const { jobId } = await replayJobOf(db.sql, ids)
    const { rows } = await db.sql.query<{ replay_id: string }>('SELECT replay_id FROM replay_items WHERE job_id = $1::bigint', [jobId])
    expect(await findItemByReplayId({ sql: db.sql, replayId: rows[0].replay_id })).toMatchObject({ job_id: jobId, seq: 1, dead_letter_id: ids[0], origin_queue: 'orders', vhost: '/' })
    expect(await findItemByReplayId({ sql: db.sql, replayId: 'no-such-replay' })).toBeUndefined()
    expect(await markItemSuperseded({ sql: db.sql, jobId, seq: 1, version: 5, note: 'v5 processed' })).toBe(true)
    expect(await markItemSuperseded({ sql: db.sql, jobId, seq: 1, version: 4, note: 'older' })).toBe(false)
    expect(await markItemSuperseded({ sql: db.sql, jobId, seq: 1, version: 5, note: 'same' })).toBe(false)
    expect(await markItemSuperseded({ sql: db.sql, jobId, seq: 1, version: 6, note: 'v6 processed' })).toBe(true)
    expect((await selectItemPage({ sql: db.sql, jobId, afterSeq: 0, limit: 1 }))[0]).toMatchObject({ superseded_by_version: 6, superseded_note: 'v6 processed' })
  })
})

describe('a waiting job', () => {
  async function waitingJob(ids: string[], status: 'awaiting_approval' | 'scheduled', ttlSeconds = 3600) {
    return db.sql.transaction(async (tx) => {
      const jobId = await insertReplayJob({ sql: tx, job: { status, selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor: 'requester' } })
      const total = await freezeItems({ sql: tx, planned: plannedIds(ids), jobId })
      await freezeJobPlan({ sql: tx, jobId, total, plan: PLAN })
      await recordJobSources({ sql: tx, jobId })
      await recordWaitingState({ sql: tx, jobId, state: { startAt: null, reasons: ['critical source'], ttlSeconds, allowFanOut: false, supersededIds: [] } })
      return { jobId, total }
    })
  }

  it('freezes items without touching any message, so two waiting jobs may hold the same ones', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{}, {}, {}])
    const a = await waitingJob(ids, 'awaiting_approval')
    const b = await waitingJob(ids.slice(1), 'awaiting_approval')
    expect([a.total, b.total]).toEqual([3, 2])
    expect(await statusesOf(db.sql, ids)).toEqual(['dead', 'dead', 'dead'])
    expect((await jobState(db.sql, a.jobId)).status).toBe('awaiting_approval')
    // Dead messages stored after the job are what the approver is told arrived since.
    const later = await storeRows(db.sql, sourceId, [{}])
    expect(await countArrived({ sql: db.sql, where: 'd.source_id = $1::bigint AND d.id > $2::bigint', params: [sourceId, ids[2]] })).toBe(later.length)
  })

  it('is decided by a caller whose sources cover it: approved it is scheduled, rejected its items are cancelled once', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{}, {}])
    const { jobId } = await waitingJob(ids, 'awaiting_approval')
    const decide = (sourceIds: string[] | null) => db.sql.transaction((tx) => lockJobForDecision({ sql: tx, id: jobId, sourceIds }))
    expect(await decide([String(BigInt(sourceId) + 1000n)])).toBeUndefined()
    expect(await decide([sourceId])).toMatchObject({ status: 'awaiting_approval', created_by: 'requester', expired: false, total: 2 })

    const startAt = await approveJob({ sql: db.sql, jobId, actor: 'approver', comment: 'go' })
    expect(startAt).toBeInstanceOf(Date)
    expect(await db.sql.query('SELECT status, approved_by, decision_comment FROM replay_jobs WHERE id = $1::bigint', [jobId]).then((r) => r.rows[0])).toEqual({
      status: 'scheduled', approved_by: 'approver', decision_comment: 'go',
    })
    // Approved, it can no longer be rejected (docs/ARCHITECTURE.md#job-lifecycle): the statement leaves it as it was.
    expect(await endWaitingJob({ sql: db.sql, jobId, event: 'reject', reason: 'too late', actor: 'ops' })).toBe(0)
    expect((await jobState(db.sql, jobId)).status).toBe('scheduled')

    const { jobId: otherId } = await waitingJob(await storeRows(db.sql, sourceId, [{}, {}]), 'awaiting_approval')
    expect(await endWaitingJob({ sql: db.sql, jobId: otherId, event: 'reject', reason: 'rejected by ops', actor: 'ops', comment: 'no' })).toBe(2)
    expect(await endWaitingJob({ sql: db.sql, jobId: otherId, event: 'cancel', reason: 'late' })).toBe(0)
    const { rows } = await db.sql.query<{ status: string; error: string }>('SELECT status, error FROM replay_items WHERE job_id = $1::bigint', [otherId])
    expect(rows).toEqual([{ status: 'cancelled', error: 'rejected by ops' }, { status: 'cancelled', error: 'rejected by ops' }])
    expect((await jobState(db.sql, otherId)).status).toBe('rejected')
    expect(await db.sql.query('SELECT count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint AND status = $2', [jobId, 'cancelled']).then((r) => r.rows[0])).toEqual({ n: 0 })
  })

  it('is found expired once its approval TTL has passed', async () => {
    const sourceId = await insertSource(db.sql)
    const { jobId } = await waitingJob(await storeRows(db.sql, sourceId, [{}]), 'awaiting_approval')
    const expired = () => db.sql.transaction((tx) => lockExpiredJobs({ sql: tx, limit: 100 })).then((jobs) => jobs.map((j) => j.id))
    expect(await expired()).not.toContain(jobId)
    await db.sql.query(`UPDATE replay_jobs SET approval_expires_at = now() - interval '1 second' WHERE id = $1::bigint`, [jobId])
    expect(await expired()).toContain(jobId)
  })
})
