import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { selectJobPauses } from '@/lib/server/replay/replay-store'
import {
  claimHeldUnderJobPauses, claimStragglers, jobCreator, lockOpenJobPauses, markJobPausesReleasing, registerHoldSource,
} from '@/lib/server/engines/release/release-store'
import { insertPauses } from '@/lib/server/pauses/insert-pause'
import {
  findPausableSource, isOriginQueue, listPausableSources, lockPauseToResume, markReleasing, mostCommonOriginQueue, originQueues, selectPauseList,
} from '@/lib/server/pauses/pauses-store'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, replayJobOf, statusesOf, storeRows } from '../helpers/store-seed'

/**
 * The pause registry's store (lib/server/pauses/pauses-store.ts) and the release engine's (engines/release/
 * release-store.ts) on either engine: held rows go back only when no other open pause covers them, each taken once,
 * never one flagged held-unexpected. Two releases racing for the same rows (SKIP LOCKED) is PostgreSQL-only:
 * tests/integration/pause-replay-end-to-end.test.ts.
 */
let db: EngineDb
let holdId: string
let dlqId: string
beforeAll(async () => {
  db = await createEngineDb()
  holdId = await registerHoldSource({ sql: db.sql, vhost: '/', queue: 'lazarus.hold' })
  dlqId = await insertSource(db.sql, { queue: 'orders.dlq' })
})
afterAll(async () => db?.drop())

const pause = (queue: string, entityKey: string | null, replayJobId: string | null = null) =>
  db.sql.transaction(async (tx) => (await insertPauses({ sql: tx, actor: 'ops', replayJobId, pauses: [{ sourceId: dlqId, vhost: '/', queue, entityKey, entityKeyRule: null, reason: 'test' }] }))[0])
const hold = (queue: string, entityKey: string | null) => ({ signature: 'lazarus:held', status: 'held' as const, heldFrom: queue, entityKey })

describe('the hold source', () => {
  it('is registered once, and turns an existing source of that queue into the hold source', async () => {
    expect(await registerHoldSource({ sql: db.sql, vhost: '/', queue: 'lazarus.hold' })).toBe(holdId)
    const plain = await insertSource(db.sql, { queue: 'lazarus.hold.other' })
    expect(await registerHoldSource({ sql: db.sql, vhost: '/', queue: 'lazarus.hold.other' })).toBe(plain)
    expect((await findPausableSource({ sql: db.sql, sourceId: plain }))?.kind).toBe('hold')
    const listed = (await listPausableSources({ sql: db.sql, sourceIds: null })).map((s) => s.queue)
    expect(listed).toContain('orders.dlq')
    expect(listed).not.toContain('lazarus.hold')
    expect((await listPausableSources({ sql: db.sql, sourceIds: [holdId, dlqId] })).map((s) => s.id)).toEqual([dlqId])
  })
})

describe('origin queues of a source', () => {
  it('are found by name, listed, and the most common among the newest messages named', async () => {
    const sourceId = await insertSource(db.sql)
    await storeRows(db.sql, sourceId, [{ originQueue: 'billing' }, { originQueue: 'orders' }, { originQueue: 'orders' }, { originQueue: null }])
    expect(await isOriginQueue({ sql: db.sql, sourceId, queue: 'orders' })).toBe(true)
    expect(await isOriginQueue({ sql: db.sql, sourceId, queue: 'shipping' })).toBe(false)
    expect(await originQueues({ sql: db.sql, sourceId, limit: 10 })).toEqual(['billing', 'orders'])
    expect(await originQueues({ sql: db.sql, sourceId, limit: 1 })).toEqual(['billing'])
    expect(await mostCommonOriginQueue({ sql: db.sql, sourceId, sample: 100 })).toBe('orders')
    expect(await mostCommonOriginQueue({ sql: db.sql, sourceId: dlqId, sample: 100 })).toBeNull()
  })
})

describe('the registry', () => {
  it('lists open pauses first with their held messages, under the version of the whole registry', async () => {
    const first = await pause('list.q', 'e-1')
    const second = await pause('list.q', null)
    await storeRows(db.sql, holdId, [hold('list.q', 'e-1'), hold('list.q', 'e-2')])
    await db.sql.query(`UPDATE pauses SET status = 'resumed', resumed_at = now() WHERE id = $1::bigint`, [first.id])
    const { version, rows } = await selectPauseList({ sql: db.sql, openOnly: false, sourceIds: null, queue: { vhost: '/', name: 'list.q' }, limit: 10 })
    expect(rows.map((r) => [r.id, r.status, r.held])).toEqual([[second.id, 'active', 2], [first.id, 'resumed', 0]])
    expect(BigInt(version)).toBeGreaterThanOrEqual(BigInt(second.version))
    expect((await selectPauseList({ sql: db.sql, openOnly: true, sourceIds: null, queue: { vhost: '/', name: 'list.q' }, limit: 10 })).rows.map((r) => r.id)).toEqual([second.id])
    expect((await selectPauseList({ sql: db.sql, openOnly: true, sourceIds: ['0'], limit: 10 })).rows).toEqual([])
  })

  it('locks a pause to resume, with its job’s status, for a caller whose sources include it', async () => {
    const { jobId } = await replayJobOf(db.sql, await storeRows(db.sql, dlqId, [{}]))
    const p = await pause('resume.q', null, jobId)
    await db.sql.transaction(async (tx) => {
      expect(await lockPauseToResume({ sql: tx, pauseId: p.id, sourceIds: ['0'] })).toBeUndefined()
      expect(await lockPauseToResume({ sql: tx, pauseId: p.id, sourceIds: [dlqId] })).toEqual({
        vhost: '/', queue: 'resume.q', entity_key: null, status: 'active', replay_job_id: jobId, job_status: 'pending',
      })
      await markReleasing({ sql: tx, pauseId: p.id, jobId })
    })
    expect((await lockOpenJobPauses({ sql: db.sql, jobId }))).toEqual([p.id])
    expect(await jobCreator({ sql: db.sql, jobId })).toBe('store-test')
    expect(await jobCreator({ sql: db.sql, jobId: '999999' })).toBe('lazarus')
  })
})

describe('a job’s pauses', () => {
  it('are listed in the order they were made, past ids of more digits', async () => {
    const { jobId } = await replayJobOf(db.sql, await storeRows(db.sql, dlqId, [{}]))
    const made: string[] = []
    for (let i = 0; i < 12; i++) made.push((await pause('listed.q', `entity-${i}`, jobId)).id)
    expect(Number(made[made.length - 1])).toBeGreaterThanOrEqual(10)
    expect((await selectJobPauses({ sql: db.sql, jobId })).map((p) => p.id)).toEqual(made)
  })
})

describe('releasing held messages', () => {
  it('marks a job’s open pauses releasing and takes the rows they hold that no other open pause covers, once', async () => {
    const { jobId } = await replayJobOf(db.sql, await storeRows(db.sql, dlqId, [{}]))
    await pause('release.q', 'e-1', jobId)
    await pause('release.q', 'e-2', jobId)
    const other = await pause('release.q', null)
    const held = await storeRows(db.sql, holdId, [hold('release.q', 'e-1'), hold('release.q', 'e-2'), hold('release.q', 'e-3')])
    expect(await markJobPausesReleasing({ sql: db.sql, jobId })).toBe(2)
    // The whole-queue pause still covers every entity: nothing goes back yet.
    expect(await claimHeldUnderJobPauses({ sql: db.sql, jobId, actor: 'executor' })).toEqual([])
    await db.sql.query(`UPDATE pauses SET status = 'resumed', resumed_at = now() WHERE id = $1::bigint`, [other.id])
    const taken = await claimHeldUnderJobPauses({ sql: db.sql, jobId, actor: 'executor' })
    expect(taken).toEqual([{ id: held[0], held_from: 'release.q', entity_key: 'e-1' }, { id: held[1], held_from: 'release.q', entity_key: 'e-2' }])
    expect(await statusesOf(db.sql, held)).toEqual(['replaying', 'replaying', 'held'])
    expect(await claimHeldUnderJobPauses({ sql: db.sql, jobId, actor: 'executor' })).toEqual([])
    expect(await markJobPausesReleasing({ sql: db.sql, jobId })).toBe(2)
  })

  it('sweeps stragglers no open pause covers, after the retry delay of a failed release, never a forged one', async () => {
    const p = await pause('straggle.q', null)
    const [explained, recent] = await storeRows(db.sql, holdId, [hold('straggle.q', 'a'), hold('straggle.q', 'b')])
    await db.sql.query(`UPDATE pauses SET status = 'resumed', resumed_at = now() WHERE id = $1::bigint`, [p.id])
    // Held with no pause of its queue ever open: flagged held-unexpected as it was stored.
    const [forged] = await storeRows(db.sql, holdId, [hold('never.paused', 'x')])
    await db.sql.query(`UPDATE dead_letter_states SET status_reason = 'release failed', status_changed_at = now() WHERE dead_letter_id = $1::bigint`, [recent])
    const sweep = () => claimStragglers({ sql: db.sql, actor: 'lazarus', retryAfterSeconds: 600, limit: 100 }).then((rows) => rows.map((r) => r.id))
    const swept = await sweep()
    expect(swept).toContain(explained)
    expect(swept).not.toContain(recent)
    expect(swept).not.toContain(forged)
    await db.sql.query(`UPDATE dead_letter_states SET status_changed_at = now() - interval '1 hour' WHERE dead_letter_id = $1::bigint`, [recent])
    expect(await sweep()).toEqual([recent])
    expect(await statusesOf(db.sql, [explained, recent, forged])).toEqual(['replaying', 'replaying', 'held'])
  })
})
