import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ChildProcess } from 'node:child_process'
import type { Channel, ChannelModel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { createReplay } from '@/lib/server/replay/create-replay'
import { resumeReplay } from '@/lib/server/replay/resume-replay'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { uniqueName, waitFor } from '../helpers/broker'
import { type ReplayBed, bulkRows, jobState, openReplayBed, replayIdOf, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { bySize } from '../helpers/soak'
import { exited, spawnWorker } from '../helpers/worker-process'
import { composition } from '@/lib/server/platform/process/composition'

/*
 * Halt under crash (issue 18): the executor runs in a child process (npm run worker's entry point) that the test
 * SIGKILLs. A staged job's stage, its bounds and its halt are columns written before the executor acts on them
 * (docs/ARCHITECTURE.md#stages-and-halts), so after a restart the job is where it was: in the same stage, or halted
 * with the one halt and the one audit entry it had. What a kill may duplicate is what it always may: items claimed
 * (at or below claimed_through) without an outcome.
 */

type Stage = { stage: number; stage_bounds: number[]; claimed_through: number; stage_published_at: Date | null; status: string; halted_at: Date | null }
type LogEntry = { stage: number; startedAt?: string; publishedAt?: string }

const readStage = async (db: TestDb, id: string) =>
  (await db.sql.query<Stage>('SELECT stage, stage_bounds, claimed_through, stage_published_at, status, halted_at FROM replay_jobs WHERE id = $1::bigint', [id])).rows[0]

/** The replay ids of the job's items without an outcome at or below claimed_through: what was in flight. */
const inFlight = async (db: TestDb, id: string) =>
  (await db.sql.query<{ replay_id: string; seq: number }>(
    `SELECT i.replay_id, i.seq FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id
     WHERE i.job_id = $1::bigint AND i.status = 'pending' AND i.seq <= j.claimed_through`,
    [id],
  )).rows

/** Every delivery on the work queue since the test began, acked as it arrives. */
async function listen(connection: ChannelModel, queue: string): Promise<{ received: ConsumeMessage[]; close(): Promise<void> }> {
  const channel: Channel = await connection.createChannel()
  await channel.prefetch(2000)
  const received: ConsumeMessage[] = []
  const { consumerTag } = await channel.consume(queue, (m) => {
    if (!m) return
    received.push(m)
    channel.ack(m)
  })
  return {
    received,
    async close() {
      await channel.cancel(consumerTag).catch(() => {})
      await channel.close().catch(() => {})
    },
  }
}

const perReplayId = (received: ConsumeMessage[]) => {
  const copies = new Map<string, ConsumeMessage[]>()
  for (const m of received) {
    const id = replayIdOf(m)
    expect(typeof id).toBe('string')
    copies.set(id!, [...(copies.get(id!) ?? []), m])
  }
  return copies
}

describe('staged replays under SIGKILL', () => {
  let bed: ReplayBed
  let db: TestDb
  const exchange = uniqueName('stagecrash_x')
  const work = uniqueName('stagecrash_work')
  const key = 'order.created'
  const workers: ChildProcess[] = []
  const env = () => ({ DATABASE_URL: db.url, LAZARUS_REPLAY_LEASE_MS: '1500', LAZARUS_REPLAY_POLL_MS: '100', LAZARUS_REPLAY_WINDOW: '500' })
  const start = () => {
    const w = spawnWorker(env())
    workers.push(w)
    return w
  }
  const kill = async (w: ReturnType<typeof spawnWorker>) => {
    if (w.exitCode !== null) throw new Error(`worker exited on its own:\n${w.output()}`)
    w.kill('SIGKILL')
    await exited(w)
  }
  /** Stores `count` dead letters that failed on the work queue; returns their ids. */
  const incident = async (count: number, start: number) => {
    await storeBulk(db.sql, uniqueName('stagecrash_dlq'), bulkRows(count, { originExchange: exchange, originKey: key, originQueue: work, start }))
    const { rows } = await db.sql.query<{ id: string }>("SELECT id::text FROM dead_letters WHERE properties->>'messageId' = ANY($1::text[]) ORDER BY id", [
      Array.from({ length: count }, (_, i) => `m-${start + i}`),
    ])
    expect(rows).toHaveLength(count)
    return rows.map((r) => r.id)
  }

  beforeAll(async () => {
    bed = await openReplayBed({ exchange, work, key })
    db = bed.db
  })

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      if (w.exitCode === null && w.signalCode === null) w.kill('SIGTERM')
      await exited(w)
    }
  })

  afterAll(async () => {
    await bed?.close()
  })

  it('SIGKILLed while publishing a ramp stage: the job resumes in that stage, and only what was in flight goes out twice', async () => {
    const TOTAL = bySize(2_000, 4_000)
    // The stages' last items: the canary (1 %), then the ramps of 10, 50 and 100 %.
    const [CANARY, RAMP1, RAMP2] = [TOTAL / 100, TOTAL / 10, TOTAL / 2]
    const ids = await incident(TOTAL, 0)
    const listener = await listen(bed.connection, work)
    try {
      // Windows of 0: every stage starts as soon as the one before has its outcomes, so the kill lands in a ramp.
      const created = (await createReplay({
        db,
        control: composition().control, replayWork: composition().replayWork,
        input: { selection: { ids }, ratePerSecond: 600, confirmCount: TOTAL, staging: { canaryPercent: 1, windowSeconds: 0, rampPercents: [10, 50, 100] } },
        actor: 'stagecrash-test',
      })) as ReplayCreatedDto
      expect(created.plan.staging?.stages.map((s) => s.throughSeq)).toEqual([CANARY, RAMP1, RAMP2, TOTAL])

      const worker = start()
      // Stage 2 (items RAMP1 + 1 … RAMP2) is half out: the canary and the first ramp passed.
      await waitFor(async () => (await jobState(db.sql, created.id)).confirmed >= TOTAL / 4 || worker.exitCode !== null, { timeoutMs: 60_000, intervalMs: 10, what: `${TOTAL / 4} confirmed` })
      await kill(worker)
      const killedAt = new Date()

      const atKill = await readStage(db, created.id)
      expect(atKill).toMatchObject({ status: 'running', stage: 2, stage_published_at: null })
      // No claim reaches past the stage's bound.
      expect(atKill.claimed_through).toBeLessThanOrEqual(RAMP2)
      expect(atKill.claimed_through).toBeGreaterThan(RAMP1)
      const flying = await inFlight(db, created.id)
      expect(flying.length).toBeGreaterThan(0)
      expect(flying.every((f) => f.seq > RAMP1 && f.seq <= atKill.claimed_through)).toBe(true)
      const flyingIds = new Set(flying.map((f) => f.replay_id))
      const { rows: unpublished } = await db.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint AND status = 'pending' AND seq > $2::int", [created.id, RAMP2])
      expect(unpublished[0].n).toBe(TOTAL - RAMP2)

      const restarted = start()
      // The restarted executor takes the job over once the dead one's lease expires: still stage 2, then the rest.
      const job = await waitForJob(db.sql, created.id, ['completed', 'failed', 'halted', 'cancelled'], 120_000)
      expect(job).toMatchObject({ status: 'completed', total: TOTAL, confirmed: TOTAL, unroutable: 0, failed: 0, skipped: 0 })
      await kill(restarted)

      const { rows: [{ stage, stage_log: log }] } = await db.sql.query<{ stage: number; stage_log: LogEntry[] }>('SELECT stage, stage_log FROM replay_jobs WHERE id = $1::bigint', [created.id])
      expect(stage).toBe(3)
      // Each stage started once and finished publishing once: the crash neither restarted stage 2 nor skipped it.
      expect(log.filter((e) => e.startedAt).map((e) => e.stage)).toEqual([1, 2, 3])
      expect(log.filter((e) => e.publishedAt).map((e) => e.stage)).toEqual([0, 1, 2, 3])
      const stage2Started = log.find((e) => e.stage === 2 && e.startedAt)!
      const stage2Published = log.find((e) => e.stage === 2 && e.publishedAt)!
      expect(Date.parse(stage2Started.startedAt!)).toBeLessThan(killedAt.getTime())
      expect(Date.parse(stage2Published.publishedAt!)).toBeGreaterThanOrEqual(Date.parse(stage2Started.startedAt!))

      // Every message reached the queue at least once; a duplicate is only ever an item in flight at the kill, and
      // every copy of it is the same replayed message.
      await waitFor(async () => perReplayId(listener.received).size === TOTAL, { timeoutMs: 30_000, what: 'every replayed message delivered' })
      const copies = perReplayId(listener.received)
      const { rows: items } = await db.sql.query<{ replay_id: string; dead_letter_id: string }>('SELECT replay_id, dead_letter_id::text FROM replay_items WHERE job_id = $1::bigint', [created.id])
      expect(items.filter((i) => !copies.has(i.replay_id))).toEqual([])
      const duplicated = [...copies].filter(([, c]) => c.length > 1)
      expect(duplicated.filter(([id]) => !flyingIds.has(id))).toEqual([])
      expect(duplicated.length).toBeLessThanOrEqual(flyingIds.size)
      const original = new Map(items.map((i) => [i.replay_id, i.dead_letter_id]))
      for (const [id, c] of duplicated) {
        expect(c).toHaveLength(2)
        expect(new Set(c.map((m) => m.properties.messageId)).size).toBe(1)
        expect(new Set(c.map((m) => String(m.properties.headers?.['x-lazarus-origin-id']))).size).toBe(1)
        expect(String(c[0].properties.headers?.['x-lazarus-origin-id'])).toBe(original.get(id))
      }
      expect(listener.received.length).toBe(TOTAL + duplicated.length)
      const { rows: statuses } = await db.sql.query<{ status: string; n: number }>(
        'SELECT st.status, count(*)::int AS n FROM dead_letters d JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.id = ANY($1::bigint[]) GROUP BY 1', [ids])
      expect(statuses).toEqual([{ status: 'replayed', n: TOTAL }])
    } finally {
      await listener.close()
    }
  })

  it('SIGKILLed after a halt: the job stays halted, publishes nothing more, and its halt and audit entry exist once', async () => {
    const TOTAL = 2_000
    const ids = await incident(TOTAL, 10_000)
    const listener = await listen(bed.connection, work)
    try {
      const created = (await createReplay({
        db,
        control: composition().control, replayWork: composition().replayWork,
        input: { selection: { ids }, ratePerSecond: 200, confirmCount: TOTAL, staging: { canaryCount: 20, windowSeconds: 0, rampPercents: [80, 100], haltPercent: 10, haltMinMessages: 5 } },
        actor: 'stagecrash-test',
      })) as ReplayCreatedDto
      const worker = start()
      // The canary passed; the first ramp (items 21..1600) is being published.
      await waitFor(async () => (await jobState(db.sql, created.id)).confirmed >= 100 || worker.exitCode !== null, { timeoutMs: 60_000, intervalMs: 20, what: '100 confirmed' })
      expect((await readStage(db, created.id)).stage).toBe(1)

      // Ten of the canary's copies come back dead, as the drainer stores them (x-lazarus-replay-id in lineage).
      const { rows: canary } = await db.sql.query<{ replay_id: string; dead_letter_id: string }>(
        'SELECT replay_id, dead_letter_id::text FROM replay_items WHERE job_id = $1::bigint AND seq <= 10 ORDER BY seq', [created.id])
      const { rows: source } = await db.sql.query<{ id: string }>('SELECT id::text FROM sources ORDER BY id LIMIT 1')
      const copies = bulkRows(10, { originExchange: exchange, originKey: key, originQueue: work, start: 50_000 }).map((row, i) => ({
        ...row, lineageReplayId: canary[i].replay_id, lineageOriginId: canary[i].dead_letter_id, replayCount: 1,
      }))
      await storeBatch({ sql: db.sql, sourceId: source[0].id, sourceLabel: 'stagecrash', rows: copies })

      // The executor halts the job while publishing; the kill follows the moment the halt is written.
      await waitFor(async () => (await readStage(db, created.id)).status === 'halted' || worker.exitCode !== null, { timeoutMs: 30_000, intervalMs: 5, what: 'the job halted' })
      await kill(worker)
      const atKill = await readStage(db, created.id)
      expect(atKill).toMatchObject({ status: 'halted', stage: 1 })
      expect(atKill.claimed_through).toBeLessThan(1_600)
      const flyingIds = new Set((await inFlight(db, created.id)).map((f) => f.replay_id))

      const counts = async () => ({
        halts: (await db.sql.query<{ stage: number; reason: string; ended_at: Date | null }>('SELECT stage, reason, ended_at FROM replay_halts WHERE job_id = $1::bigint', [created.id])).rows,
        audit: (await db.sql.query("SELECT 1 FROM audit_log WHERE action = 'replay.halted' AND subject_id = $1", [created.id])).rows.length,
      })
      expect(await counts()).toEqual({ halts: [{ stage: 0, reason: 'share', ended_at: null }], audit: 1 })

      // A restarted executor is at work (it runs another job to the end) and leaves the halted job alone.
      const restarted = start()
      const other = await incident(50, 20_000)
      const second = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: other }, ratePerSecond: 500, confirmCount: 50 }, actor: 'stagecrash-test' })) as ReplayCreatedDto
      expect(await waitForJob(db.sql, second.id, ['completed', 'failed'], 60_000)).toMatchObject({ status: 'completed', confirmed: 50 })
      const { rows: secondItems } = await db.sql.query<{ replay_id: string }>('SELECT replay_id FROM replay_items WHERE job_id = $1::bigint', [second.id])
      const secondIds = new Set(secondItems.map((i) => i.replay_id))
      await waitFor(async () => listener.received.filter((m) => secondIds.has(replayIdOf(m) ?? '')).length >= 50, { timeoutMs: 30_000, what: 'the second job delivered' })

      const after = await readStage(db, created.id)
      expect(after).toEqual(atKill)
      expect(await counts()).toEqual({ halts: [{ stage: 0, reason: 'share', ended_at: null }], audit: 1 })
      // Nothing past what was claimed at the kill went out, and nothing went out twice.
      const { rows: items } = await db.sql.query<{ replay_id: string; seq: number }>('SELECT replay_id, seq FROM replay_items WHERE job_id = $1::bigint', [created.id])
      const seqOf = new Map(items.map((i) => [i.replay_id, i.seq]))
      const delivered = perReplayId(listener.received.filter((m) => seqOf.has(replayIdOf(m) ?? '')))
      expect([...delivered.keys()].every((id) => seqOf.get(id)! <= atKill.claimed_through)).toBe(true)
      expect([...delivered.values()].every((c) => c.length === 1)).toBe(true)

      // Resumed (the fix is out): the job finishes from where it stopped; only its in-flight items may go out twice.
      await resumeReplay({ db, replayWork: composition().replayWork, id: created.id, actor: 'operator' })
      const done = await waitForJob(db.sql, created.id, ['completed', 'failed', 'halted', 'cancelled'], 120_000)
      expect(done).toMatchObject({ status: 'completed', confirmed: TOTAL })
      await kill(restarted)
      await waitFor(async () => perReplayId(listener.received.filter((m) => seqOf.has(replayIdOf(m) ?? ''))).size === TOTAL, { timeoutMs: 30_000, what: 'every replayed message delivered' })
      const all = perReplayId(listener.received.filter((m) => seqOf.has(replayIdOf(m) ?? '')))
      const duplicated = [...all].filter(([, c]) => c.length > 1).map(([id]) => id)
      expect(duplicated.filter((id) => !flyingIds.has(id))).toEqual([])
      const { halts } = await counts()
      expect(halts).toHaveLength(1)
      expect(halts[0].ended_at).not.toBeNull()
    } finally {
      await listener.close()
    }
  })
})
