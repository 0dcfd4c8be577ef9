import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { claimJob } from '@/lib/server/engines/replay-executor/job-store'
import { advanceStage, deferJob, expireHaltedJobs, haltJob, markStagePublished, readStage } from '@/lib/server/engines/replay-executor/stage-control-store'
import { lockDueJob, markJobStarted, sendBackForApproval, stillDeadRoutes, takeItemsMessages } from '@/lib/server/engines/replay-executor/start-store'
import { freezeItems, recordWaitingState } from '@/lib/server/replay/approval-store'
import type { HaltDecision } from '@/lib/server/replay/halt-decision'
import { insertReplayJob } from '@/lib/server/replay/replay-store'
import { lockJobForResume, resumeHaltedJob, setJobStaging } from '@/lib/server/replay/stage-store'
import type { ReplayStagingPlanDto } from '@/lib/shared/schemas/replay'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { jobState } from '../helpers/replay'
import { insertSource, PLAN, plannedIds, replayJobOf, statusesOf, storeRows } from '../helpers/store-seed'

/**
 * The stores of staged and scheduled replays on either engine: the API's (lib/server/replay/stage-store.ts) and the
 * executor's (engines/replay-executor/stage-control-store.ts, start-store.ts). Stage moves and halts are guarded by the lease,
 * so a run that lost its job writes nothing; a scheduled job starts by taking the messages still dead.
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
})
afterAll(async () => db?.drop())
beforeEach(async () => {
  // Only this test's jobs are claimable or due.
  await db.sql.query(`UPDATE replay_jobs SET status = 'completed' WHERE status IN ('pending', 'running', 'scheduled')`)
})

const STAGING: ReplayStagingPlanDto = {
  canaryCount: 2, canaryPercent: null, rampPercents: [50], windowSeconds: 60, windowFrom: 'request', retryTtlSeconds: null, haltPercent: 20, haltMinMessages: 1, stages: [],
}
const DECISION: HaltDecision = {
  stage: 0, reason: 'share', evidence: { published: 2, refailed: 1, sharePercent: 50, haltPercent: 20, haltMinMessages: 1, newGroups: [] },
}

/** A job of `count` messages staged as a canary of 2, then half, then the rest. */
async function stagedJob(count: number): Promise<{ jobId: string; stages: ReplayStagingPlanDto['stages'] }> {
  const ids = await storeRows(db.sql, await insertSource(db.sql), Array.from({ length: count }, () => ({})))
  const { jobId, taken } = await replayJobOf(db.sql, ids)
  const { stages } = await setJobStaging({ sql: db.sql, jobId, total: taken, staging: STAGING })
  return { jobId, stages }
}

describe('a staged job', () => {
  it('moves from stage to stage under its lease only, each window starting once', async () => {
    const { jobId, stages } = await stagedJob(8)
    expect(stages).toEqual([{ throughSeq: 2, size: 2 }, { throughSeq: 4, size: 2 }, { throughSeq: 8, size: 4 }])
    expect(await readStage({ sql: db.sql, jobId })).toMatchObject({ stage_bounds: [2, 4, 8], stage: 0, stage_published_at: null, window_ms: 60_000, halt_min: 1 })
    await claimJob({ sql: db.sql, owner: 'w', leaseMs: 60_000, skip: [] })

    await markStagePublished({ sql: db.sql, jobId, owner: 'w', stage: 0 })
    const published = (await readStage({ sql: db.sql, jobId }))!.stage_published_at
    expect(published).toBeInstanceOf(Date)
    // A second run after a crash keeps the window's start.
    await markStagePublished({ sql: db.sql, jobId, owner: 'w', stage: 0 })
    expect((await readStage({ sql: db.sql, jobId }))!.stage_published_at).toEqual(published)

    expect(await advanceStage({ sql: db.sql, jobId, owner: 'someone-else', from: 0 })).toBe(false)
    expect(await advanceStage({ sql: db.sql, jobId, owner: 'w', from: 0 })).toBe(true)
    expect(await advanceStage({ sql: db.sql, jobId, owner: 'w', from: 0 })).toBe(false)
    const stage = await readStage({ sql: db.sql, jobId })
    expect(stage).toMatchObject({ stage: 1, stage_published_at: null })
    const { rows } = await db.sql.query<{ stage_log: { stage: number }[] }>('SELECT stage_log FROM replay_jobs WHERE id = $1::bigint', [jobId])
    expect(rows[0].stage_log.map((e) => Object.keys(e).sort().join())).toEqual(['stage', 'publishedAt,stage', 'stage,startedAt'])
  })

  it('gives the lease back until its window ends, out of every claim’s way until then', async () => {
    const { jobId } = await stagedJob(5)
    await claimJob({ sql: db.sql, owner: 'w', leaseMs: 60_000, skip: [] })
    await deferJob({ sql: db.sql, jobId, owner: 'w', until: new Date(Date.now() + 3_600_000) })
    expect(await claimJob({ sql: db.sql, owner: 'v', leaseMs: 60_000, skip: [] })).toBeNull()
    await deferJob({ sql: db.sql, jobId, owner: 'nobody', until: new Date(0) })
    expect(await claimJob({ sql: db.sql, owner: 'v', leaseMs: 60_000, skip: [] })).toBeNull()
  })

  it('halts once with its evidence and an audit entry, resumes, and is cancelled when halted past the timeout', async () => {
    const { jobId } = await stagedJob(5)
    await claimJob({ sql: db.sql, owner: 'w', leaseMs: 60_000, skip: [] })
    expect(await haltJob({ sql: db.sql, jobId, owner: 'other', decision: DECISION })).toBe(false)
    expect(await haltJob({ sql: db.sql, jobId, owner: 'w', decision: DECISION })).toBe(true)
    expect(await haltJob({ sql: db.sql, jobId, owner: 'w', decision: DECISION })).toBe(false)
    expect((await jobState(db.sql, jobId)).status).toBe('halted')
    const halts = async () => (await db.sql.query<{ reason: string; outcome: string | null; ended_by: string | null }>('SELECT reason, outcome, ended_by FROM replay_halts WHERE job_id = $1::bigint ORDER BY id', [jobId])).rows
    expect(await halts()).toEqual([{ reason: 'share', outcome: null, ended_by: null }])
    const { rows: audit } = await db.sql.query<{ action: string; summary: string }>(`SELECT action, summary FROM audit_log WHERE subject_type = 'replay' AND subject_id = $1 ORDER BY id`, [jobId])
    expect(audit).toEqual([{ action: 'replay.halted', summary: `Replay ${jobId} halted in the canary: 1 of 2 replayed messages in the canary failed again (50 %, threshold 20 % and at least 1)` }])
    expect(await claimJob({ sql: db.sql, owner: 'v', leaseMs: 60_000, skip: [] })).toBeNull()

    await db.sql.transaction(async (tx) => {
      expect(await lockJobForResume({ sql: tx, jobId, sourceIds: null })).toMatchObject({ status: 'halted', kind: 'replay', stage: 0 })
      await resumeHaltedJob({ sql: tx, jobId, actor: 'ops' })
    })
    expect(await halts()).toEqual([{ reason: 'share', outcome: 'resumed', ended_by: 'ops' }])
    expect((await claimJob({ sql: db.sql, owner: 'v', leaseMs: 60_000, skip: [] }))?.id).toBe(jobId)

    expect(await haltJob({ sql: db.sql, jobId, owner: 'v', decision: { ...DECISION, stage: 1 } })).toBe(true)
    expect(await expireHaltedJobs({ sql: db.sql, timeoutMs: 3_600_000 })).toEqual([])
    await db.sql.query(`UPDATE replay_jobs SET halted_at = now() - interval '2 hours' WHERE id = $1::bigint`, [jobId])
    expect(await expireHaltedJobs({ sql: db.sql, timeoutMs: 3_600_000 })).toEqual([jobId])
    expect(await halts()).toEqual([
      { reason: 'share', outcome: 'resumed', ended_by: 'ops' },
      { reason: 'share', outcome: 'timed-out', ended_by: 'lazarus' },
    ])
    const { rows } = await db.sql.query<{ status: string; cancel_requested_by: string }>('SELECT status, cancel_requested_by FROM replay_jobs WHERE id = $1::bigint', [jobId])
    expect(rows).toEqual([{ status: 'running', cancel_requested_by: 'lazarus' }])
  })
})

describe('starting a scheduled job', () => {
  it('locks the next due job, takes the messages still dead and skips the others with what became of them', async () => {
    const sourceId = await insertSource(db.sql)
    const ids = await storeRows(db.sql, sourceId, [{ originQueue: 'orders' }, { originQueue: 'orders' }, { originQueue: 'billing' }, { originQueue: 'orders' }])
    const jobId = await db.sql.transaction(async (tx) => {
      const id = await insertReplayJob({ sql: tx, job: { status: 'scheduled', selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor: 'requester' } })
      await freezeItems({ sql: tx, planned: plannedIds(ids), jobId: id })
      await recordWaitingState({ sql: tx, jobId: id, state: { startAt: new Date(Date.now() + 3_600_000).toISOString(), reasons: null, ttlSeconds: 60, allowFanOut: false, supersededIds: [] } })
      return id
    })
    expect(await db.sql.transaction((tx) => lockDueJob({ sql: tx, skip: [] }))).toBeUndefined()
    await db.sql.query(`UPDATE replay_jobs SET start_at = now() - interval '1 second' WHERE id = $1::bigint`, [jobId])
    expect(await db.sql.transaction((tx) => lockDueJob({ sql: tx, skip: [jobId] }))).toBeUndefined()

    // Meanwhile one message was resolved and another job took one.
    await db.sql.query(`INSERT INTO dead_letter_states (dead_letter_id, status, failed_at) SELECT id, 'resolved', failed_at FROM dead_letters WHERE id = $1::bigint`, [ids[0]])
    await replayJobOf(db.sql, [ids[1]])
    const started = await db.sql.transaction(async (tx) => {
      const due = await lockDueJob({ sql: tx, skip: [] })
      expect(due).toMatchObject({ id: jobId, created_by: 'requester', pause_entities: false, superseded_ids: [] })
      expect(await stillDeadRoutes({ sql: tx, jobId })).toEqual({
        count: 2,
        routes: [{ exchange: '', routing_key: 'billing', origin_queue: 'billing', jetstream: false, n: 1 }, { exchange: '', routing_key: 'orders', origin_queue: 'orders', jetstream: false, n: 1 }],
      })
      const result = await takeItemsMessages({ sql: tx, jobId, actor: 'requester' })
      await markJobStarted({ sql: tx, jobId })
      return result
    })
    expect(started).toEqual({ taken: 2, skipped: 2 })
    expect(await statusesOf(db.sql, ids)).toEqual(['resolved', 'replaying', 'replaying', 'replaying'])
    const { rows } = await db.sql.query<{ status: string; error: string | null }>('SELECT status, error FROM replay_items WHERE job_id = $1::bigint ORDER BY seq', [jobId])
    expect(rows).toEqual([
      { status: 'skipped', error: 'resolved meanwhile' }, { status: 'skipped', error: 'taken by another replay meanwhile' },
      { status: 'pending', error: null }, { status: 'pending', error: null },
    ])
    expect(await jobState(db.sql, jobId)).toMatchObject({ status: 'pending', skipped: 2 })
    expect((await claimJob({ sql: db.sql, owner: 'w', leaseMs: 60_000, skip: [] }))?.id).toBe(jobId)
  })

  it('goes back for approval with the reasons when its re-check found a changed plan', async () => {
    const ids = await storeRows(db.sql, await insertSource(db.sql), [{}])
    const pending = await insertReplayJob({ sql: db.sql, job: { status: 'pending', selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor: 'requester' } })
    // Only a scheduled job is re-checked at its start; the state machine refuses the others in the statement.
    await expect(sendBackForApproval({ sql: db.sql, jobId: pending, reasons: ['x'], plan: PLAN, ttlSeconds: 600 })).rejects.toThrow(/no longer scheduled/)
    expect((await jobState(db.sql, pending)).status).toBe('pending')
    const jobId = await insertReplayJob({ sql: db.sql, job: { status: 'scheduled', selection: { ids }, target: { type: 'queue' }, plan: PLAN, actor: 'requester' } })
    await sendBackForApproval({ sql: db.sql, jobId, reasons: ['the target changed'], plan: { ...PLAN, warnings: ['changed'] }, ttlSeconds: 600 })
    const { rows } = await db.sql.query<{ status: string; approval_reasons: string[]; plan: { warnings: string[] }; expires_in: number }>(
      `SELECT status, approval_reasons, plan, extract(epoch FROM approval_expires_at - now())::int AS expires_in FROM replay_jobs WHERE id = $1::bigint`,
      [jobId],
    )
    expect(rows[0]).toMatchObject({ status: 'awaiting_approval', approval_reasons: ['the target changed'], plan: { warnings: ['changed'] } })
    expect(rows[0].expires_in).toBeGreaterThan(590)
  })
})
