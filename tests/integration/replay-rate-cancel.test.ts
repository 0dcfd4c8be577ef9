import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH, createTestUser, tokenActor } from '../helpers/auth'
import type { Channel } from '@/lib/server/platform/broker/amqplib'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import * as cancelRoute from '@/app/api/replays/[id]/cancel/route'
import { uniqueName, waitFor } from '../helpers/broker'
import { type ReplayBed, bulkRows, jobState, openReplayBed, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

describe('replay rate limit and cancel', () => {
  let db: TestDb
  let bed: ReplayBed
  let channel: Channel
  let executor: ReplayExecutor
  const exchange = uniqueName('rate_x')
  const work = uniqueName('rate_work')
  const arrivals: { at: number; replayId: string }[] = []
  let rateSource: string
  let cancelSource: string

  beforeAll(async () => {
    bed = await openReplayBed({ exchange, work, key: 'k' })
    ;({ db, channel } = bed)
    const origin = { originExchange: exchange, originKey: 'k', originQueue: work }
    rateSource = await storeBulk(db.sql, uniqueName('rate_dlq'), bulkRows(1_000, origin))
    cancelSource = await storeBulk(db.sql, uniqueName('cancel_dlq'), bulkRows(2_000, { ...origin, start: 10_000 }))
    await channel.consume(work, (m) => m && arrivals.push({ at: performance.now(), replayId: String(m.properties.headers?.['x-lazarus-replay-id']) }), { noAck: true })
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await bed?.close()
  })

  // A rate limit protects the consumers behind the queue, so what is asserted is the limit: over the whole job and over
  // any three seconds of it, never more than the rate (with the bucket's 50 ms burst, within 10 %). A slow or busy
  // machine can only make a job slower, never faster, so these hold on any machine; how exactly the bucket paces is
  // tests/unit/replay-token-bucket.test.ts's, on a clock it controls.
  it('never publishes faster than the job rate', async () => {
    arrivals.length = 0
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { source: rateSource } }, ratePerSecond: 200, confirmCount: 1_000 }, actor: 'rate-test' })) as ReplayCreatedDto
    expect(created.plan).toMatchObject({ replayable: 1_000, ratePerSecond: 200, estimatedSeconds: 5 })
    await waitForJob(db.sql, created.id)
    expect(arrivals).toHaveLength(1_000)
    const start = arrivals[0].at
    const overall = (999 * 1000) / (arrivals[999].at - start)
    expect(overall).toBeLessThanOrEqual(220)
    // Every window of three seconds that starts at an arrival: at most 3 s of tokens plus the initial one.
    let busiest = 0
    for (let first = 0, last = 0; first < arrivals.length; first++) {
      while (last < arrivals.length && arrivals[last].at < arrivals[first].at + 3_000) last++
      busiest = Math.max(busiest, last - first)
    }
    expect(busiest / 3).toBeLessThanOrEqual(220)
  })

  // How soon a cancel takes effect is a speed, not a behaviour (no timing asserts in tests): what is asserted is that
  // the job ends cancelled, that nothing arrives that it did not count as confirmed, and that every message is
  // accounted for.
  it('stops publishing once cancelled, and leaves the rest dead', async () => {
    arrivals.length = 0
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { source: cancelSource } }, ratePerSecond: 200, confirmCount: 2_000 }, actor: 'alice' })) as ReplayCreatedDto
    await waitFor(async () => arrivals.length >= 300, { what: '300 arrivals', timeoutMs: 20_000, intervalMs: 10 })
    const response = await cancelRoute.POST(
      new Request(`http://lazarus.test/api/replays/${created.id}/cancel`, { method: 'POST', headers: { authorization: (await createTestUser(db, 'bob', [{ role: 'operator' }])).authorization } }),
      { params: Promise.resolve({ id: created.id }) },
    )
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ id: created.id, cancelRequested: true })
    const job = await waitForJob(db.sql, created.id, ['cancelled', 'completed', 'failed'], 30_000)
    expect(job.status).toBe('cancelled')
    // Once the run is over its channel is closed, so every publish it made is in the queue; a marker sent now arrives
    // after all of them. Whatever the run published, confirmed or not, has then arrived, and one it did not count as
    // confirmed shows below as an arrival too many.
    await waitFor(async () => !executor.status().jobs.includes(created.id), { what: 'the cancelled run to close its channel', timeoutMs: 20_000, intervalMs: 10 })
    channel.sendToQueue(work, Buffer.from('end'), { headers: { 'x-lazarus-replay-id': 'marker' } })
    await waitFor(async () => arrivals.some((a) => a.replayId === 'marker'), { what: 'the marker behind the replayed messages', timeoutMs: 20_000, intervalMs: 10 })
    arrivals.splice(arrivals.findIndex((a) => a.replayId === 'marker'), 1)
    expect(arrivals.length).toBeLessThan(2_000)

    // Everything is accounted for: confirmed ones arrived once and are replayed, the rest are dead again.
    const final = await jobState(db.sql, created.id)
    expect(final.confirmed).toBe(arrivals.length)
    expect(new Set(arrivals.map((a) => a.replayId)).size).toBe(arrivals.length)
    expect(final.confirmed + final.cancelled).toBe(2_000)
    const { rows } = await db.sql.query<{ status: string; reason: string | null; n: number }>(
      `SELECT status, status_reason AS reason, count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE source_id = $1::bigint GROUP BY 1, 2 ORDER BY 1`,
      [cancelSource],
    )
    expect(rows).toEqual([
      { status: 'dead', reason: 'replay cancelled', n: final.cancelled },
      { status: 'replayed', reason: null, n: final.confirmed },
    ])
    const { rows: items } = await db.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint GROUP BY 1 ORDER BY 1', [created.id])
    expect(items).toEqual([
      { status: 'cancelled', n: final.cancelled },
      { status: 'confirmed', n: final.confirmed },
    ])
    const { rows: audit } = await db.sql.query<{ action: string; actor: string; outcome: string }>(
      `SELECT action, actor, outcome FROM audit_log WHERE subject_type = 'replay' AND subject_id = $1 ORDER BY id`,
      [created.id],
    )
    expect(audit).toEqual([
      { action: 'replay.created', actor: 'alice', outcome: 'pending' },
      { action: 'replay.cancelled', actor: tokenActor('bob'), outcome: 'requested' },
      { action: 'replay.finished', actor: 'alice', outcome: 'cancelled' },
    ])
    // A finished job cannot be cancelled again.
    const again = await cancelRoute.POST(new Request(`http://lazarus.test/api/replays/${created.id}/cancel`, { method: 'POST', headers: ADMIN_AUTH }), { params: Promise.resolve({ id: created.id }) })
    expect(again.status).toBe(409)
  })
})
