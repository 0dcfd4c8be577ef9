import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { createReplay } from '@/lib/server/replay/create-replay'
import { ITEM_STATUS_SQL } from '@/lib/server/replay/item-status-sql'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { type ReplayBed, bulkRows, collect, jobState, openReplayBed, replayIdOf, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { bySize } from '../helpers/soak'
import { exited, spawnWorker } from '../helpers/worker-process'
import { composition } from '@/lib/server/platform/process/composition'

const TOTAL = bySize(4_000, 10_000)

// Items are claimed (the job's claimed_through raised past them, durably) before they are published and confirmed
// only after the broker's ack, so a SIGKILL can only duplicate what was in flight at that moment; everything else goes out exactly once, after a takeover by the
// next worker once the dead one's lease expires.
describe('replay crash safety', () => {
  let db: TestDb
  let bed: ReplayBed
  let connection: ChannelModel
  const exchange = uniqueName('crash_x')
  const work = uniqueName('crash_work')
  // A small publish window keeps what can be in flight (MAX_IN_FLIGHT: a chunk going out, one claimed ahead, and the
  // outcomes waiting to be written) well below what is left at either kill, so pending items remain.
  const WINDOW = 100
  // Two chunks of 500 and the outcomes waiting to be written; a CI run on a busy machine saw 1,570, so the bound
  // leaves room for a few more windows while still catching an executor that claims the job far ahead.
  const MAX_IN_FLIGHT = 500 + 500 + 10 * WINDOW
  const env = () => ({ DATABASE_URL: db.url, LAZARUS_REPLAY_LEASE_MS: '1500', LAZARUS_REPLAY_POLL_MS: '100', LAZARUS_REPLAY_WINDOW: String(WINDOW) })

  beforeAll(async () => {
    bed = await openReplayBed({ exchange, work, key: 'order.created' })
    ;({ db, connection } = bed)
    await storeBulk(db.sql, uniqueName('crash_dlq'), bulkRows(TOTAL, { originExchange: exchange, originKey: 'order.created', originQueue: work }))
  })

  afterAll(async () => {
    await bed?.close()
  })

  const openItems = (jobId: string) =>
    db.sql
      .query<{ replay_id: string; status: string }>(
        `SELECT i.replay_id, ${ITEM_STATUS_SQL} AS status FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id
         WHERE i.job_id = $1::bigint AND i.status IN ('in_flight', 'pending')`,
        [jobId],
      )
      .then((r) => r.rows)

  /**
   * Freezes the worker (SIGSTOP) at a moment some of the job's items are in flight and others still pending, and
   * returns them as they stand: the SIGKILL that follows then lands mid-replay however busy the machine is. Between
   * chunks nothing is in flight; then the worker runs on until something is.
   */
  async function stopMidFlight(worker: ReturnType<typeof spawnWorker>, jobId: string) {
    for (let attempt = 1; ; attempt++) {
      worker.kill('SIGSTOP')
      const rows = await openItems(jobId)
      const inFlight = rows.filter((r) => r.status === 'in_flight').length
      if (inFlight > 0 && rows.length > inFlight) return rows
      if (rows.length === inFlight || attempt === 50) throw new Error(`no moment found with items both in flight and pending (${inFlight} of ${rows.length} in flight)`)
      worker.kill('SIGCONT')
      await waitFor(async () => (await openItems(jobId)).some((r) => r.status === 'in_flight'), { timeoutMs: 30_000, intervalMs: 5, what: 'an item in flight' })
    }
  }

  it('delivers every message at least once across SIGKILLs, duplicating only what was in flight', async () => {
    const { rows: groups } = await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups')
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId: groups[0].id }, ratePerSecond: 1_000, confirmCount: TOTAL }, actor: 'crash-test' })) as ReplayCreatedDto
    expect(created.plan.replayable).toBe(TOTAL)

    const inFlightAtKill = new Set<string>()
    for (const killAt of [TOTAL / 5, TOTAL * 0.45]) {
      const worker = spawnWorker(env())
      await waitFor(async () => (await jobState(db.sql, created.id)).confirmed >= killAt || worker.exitCode !== null, { timeoutMs: 60_000, intervalMs: 10, what: `${killAt} confirmed` })
      if (worker.exitCode !== null) throw new Error(`worker exited on its own:\n${worker.output()}`)
      const rows = await stopMidFlight(worker, created.id)
      worker.kill('SIGKILL')
      await exited(worker)
      const inFlight = rows.filter((r) => r.status === 'in_flight')
      // The kill landed mid-replay: some items were in flight, others not yet published.
      expect(inFlight.length).toBeGreaterThan(0)
      expect(rows.length - inFlight.length).toBeGreaterThan(0)
      // In flight: the chunk going out and the one claimed ahead (500 each), and confirmed items whose outcome waits to
      // be written. Only these can go out twice (asserted below), so the executor must not claim further ahead.
      expect(inFlight.length).toBeLessThanOrEqual(MAX_IN_FLIGHT)
      for (const r of inFlight) inFlightAtKill.add(r.replay_id)
    }

    const finalWorker = spawnWorker(env())
    try {
      const job = await waitForJob(db.sql, created.id, ['completed', 'failed'], 120_000)
      expect(job).toMatchObject({ status: 'completed', total: TOTAL, confirmed: TOTAL, unroutable: 0, failed: 0, skipped: 0 })
    } finally {
      finalWorker.kill('SIGTERM')
      await exited(finalWorker)
    }

    // Every publish was confirmed, so the queue already holds all that went out: each message once, plus the in-flight
    // ones a killed worker had published before its claim was taken over.
    const depth = await queueDepth(work)
    expect(depth).toBeGreaterThanOrEqual(TOTAL)
    expect(depth).toBeLessThanOrEqual(TOTAL + inFlightAtKill.size)
    const received = await collect(connection, work, depth)
    const perReplayId = new Map<string, number>()
    for (const message of received) {
      const id = replayIdOf(message)
      expect(typeof id).toBe('string')
      perReplayId.set(id!, (perReplayId.get(id!) ?? 0) + 1)
    }
    const { rows: items } = await db.sql.query<{ replay_id: string }>('SELECT replay_id FROM replay_items WHERE job_id = $1::bigint', [created.id])
    expect(items).toHaveLength(TOTAL)
    const missing = items.filter((i) => !perReplayId.has(i.replay_id))
    expect(missing).toEqual([])
    const duplicated = [...perReplayId].filter(([, n]) => n > 1).map(([id]) => id)
    expect(duplicated.filter((id) => !inFlightAtKill.has(id))).toEqual([])
    expect(Math.max(...perReplayId.values())).toBeLessThanOrEqual(3)
    expect(received.length).toBe(TOTAL + duplicated.reduce((sum, id) => sum + perReplayId.get(id)! - 1, 0))

    const { rows: statuses } = await db.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id GROUP BY 1')
    expect(statuses).toEqual([{ status: 'replayed', n: TOTAL }])
    const { rows: counters } = await db.sql.query<{ replayed: number }>('SELECT sum(replayed_count)::int AS replayed FROM error_groups')
    expect(counters[0].replayed).toBe(TOTAL)
  })
})
