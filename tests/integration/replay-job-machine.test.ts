import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cancelReplay } from '@/lib/server/replay/cancel-replay'
import { resumeReplay } from '@/lib/server/replay/resume-replay'
import { composition } from '@/lib/server/platform/process/composition'
import { transitionReplayJob } from '@/lib/server/replay/transition-replay-job'
import { canHappen, REPLAY_JOB_EVENTS, REPLAY_JOB_STATUSES, REPLAY_JOB_TRANSITIONS, type ReplayJobStatus } from '@/lib/shared/replay-job-machine'
import { parseValueList, readCheckConstraints } from '../helpers/prisma-schema-drift'
import { createTestDb, type TestDb } from '../helpers/test-db'

/**
 * The replay job's state machine against a migrated PostgreSQL database: the table (lib/shared/replay-job-machine.ts)
 * and the CHECK on replay_jobs.status allow the same statuses, and transitionReplayJob moves a job exactly as the
 * table says, refusing, in its one statement, every event the table lacks for the job's status.
 */

describe('the replay job state machine in PostgreSQL', () => {
  let db: TestDb

  beforeAll(async () => {
    db = await createTestDb('lazarus_job_machine')
  })
  afterAll(async () => {
    await db?.drop()
  })

  /** A job in `status`, last updated an hour ago (so an UPDATE shows). */
  async function jobIn(status: ReplayJobStatus): Promise<string> {
    const { rows } = await db.sql.query<{ id: string }>(
      `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, plan, created_by, updated_at)
       VALUES ('replay', $1, '{}', '{"type":"queue"}', 1, '{}', 'machine', now() - interval '1 hour') RETURNING id::text`,
      [status],
    )
    return rows[0].id
  }

  const row = async (id: string) => (await db.sql.query<{ row: Record<string, unknown> }>('SELECT to_jsonb(j) AS row FROM replay_jobs j WHERE id = $1::bigint', [id])).rows[0].row

  it('allows in its CHECK constraint exactly the statuses of the table', async () => {
    const check = (await readCheckConstraints(db.sql)).find((c) => c.name === 'replay_jobs_status_check')
    expect(check, 'the migrations create no replay_jobs_status_check').toBeDefined()
    const allowed = parseValueList(check!.definition)
    expect(allowed?.column).toBe('status')
    expect([...allowed!.values].sort()).toEqual([...REPLAY_JOB_STATUSES].sort())
    for (const t of REPLAY_JOB_TRANSITIONS) {
      if (t.from !== null) expect(allowed!.values, `${t.event} from ${t.from}`).toContain(t.from)
      expect(allowed!.values, `${t.event} to ${t.to}`).toContain(t.to)
    }
    await expect(jobIn('archived' as ReplayJobStatus)).rejects.toMatchObject({ code: '23514', constraint: 'replay_jobs_status_check' })
  })

  it('takes every transition of the table and refuses every other, leaving the row as it was', async () => {
    const walked: string[] = []
    for (const event of REPLAY_JOB_EVENTS) {
      if (event === 'create') continue
      // finish goes where the caller names; every other event where the table says.
      const targets = event === 'finish' ? (['completed', 'cancelled', 'failed'] as const) : [undefined]
      for (const to of targets) {
        for (const status of REPLAY_JOB_STATUSES) {
          const id = await jobIn(status)
          const before = await row(id)
          const result = await transitionReplayJob<{ id: string }>({ sql: db.sql, event, to, where: 'j.id = $1::bigint', params: [id] })
          const after = await row(id)
          const what = `${event}${to ? ` to ${to}` : ''} from ${status}`
          const expected = REPLAY_JOB_TRANSITIONS.find((t) => t.event === event && t.from === status && (to === undefined || t.to === to))
          if (expected) {
            expect(canHappen(event, status, to), what).toBe(true)
            expect(result.rows, what).toEqual([{ id }])
            expect(after.status, what).toBe(expected.to)
            expect(after.updated_at, what).not.toBe(before.updated_at)
            walked.push(`${event}: ${status} → ${expected.to}`)
          } else {
            expect(result.rows, what).toEqual([])
            expect(after, what).toEqual(before)
          }
        }
      }
    }
    // Every transition but create's (an INSERT) was taken once.
    expect(walked.length).toBe(REPLAY_JOB_TRANSITIONS.filter((t) => t.event !== 'create').length)
  })

  it('refuses a transition from a status the table lacks for it, in the statement, with the row unchanged', async () => {
    const id = await jobIn('completed')
    const before = await row(id)
    // A resume's SET, as resumeHaltedJob writes it, on a job that has ended: nothing is written.
    const result = await transitionReplayJob({ sql: db.sql, event: 'resume', set: 'halted_at = NULL, run_failures = 0, lease_owner = NULL', where: 'j.id = $1::bigint', params: [id] })
    expect(result).toEqual({ rows: [] })
    expect(await row(id)).toEqual(before)
  })

  it("keeps the caller's conditions on top of the table's: a running job whose cancel was requested is not halted", async () => {
    const id = await jobIn('running')
    await db.sql.query("UPDATE replay_jobs SET cancel_requested_at = now(), lease_owner = 'w1' WHERE id = $1::bigint", [id])
    const before = await row(id)
    const result = await transitionReplayJob({ sql: db.sql, event: 'halt', where: "j.id = $1::bigint AND j.lease_owner = 'w1' AND j.cancel_requested_at IS NULL", params: [id] })
    expect(result.rows).toEqual([])
    expect(await row(id)).toEqual(before)
  })

  it('answers an operator as before: cancel of an ended job and resume of a running one are 409s, the job unchanged', async () => {
    for (const status of ['completed', 'failed', 'rejected'] as const) {
      const id = await jobIn(status)
      const before = await row(id)
      await expect(cancelReplay({ db, replayWork: composition().replayWork, id, actor: 'alice' })).rejects.toMatchObject({
        code: 'conflict',
        message: `replay ${id} has already ${status === 'failed' ? 'failed' : `been ${status}`}`,
      })
      expect(await row(id)).toEqual(before)
    }
    const running = await jobIn('running')
    const before = await row(running)
    await expect(resumeReplay({ db, replayWork: composition().replayWork, id: running, actor: 'alice' })).rejects.toMatchObject({
      code: 'conflict',
      message: `replay ${running} is running, not halted: only a halted replay can be resumed`,
    })
    expect(await row(running)).toEqual(before)
  })

  it('names the event that has no transition to the status asked for', async () => {
    const id = await jobIn('running')
    await expect(transitionReplayJob({ sql: db.sql, event: 'finish', to: 'expired', where: 'j.id = $1::bigint', params: [id] })).rejects.toThrow(
      'replay job event "finish" has no transition to "expired"',
    )
    await expect(transitionReplayJob({ sql: db.sql, event: 'finish', where: 'j.id = $1::bigint', params: [id] })).rejects.toThrow(/several statuses/)
  })
})
