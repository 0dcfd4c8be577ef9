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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

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

  it('holds the job rate within 10%', async () => {
    arrivals.length = 0
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { source: rateSource } }, ratePerSecond: 200, confirmCount: 1_000 }, actor: 'rate-test' })) as ReplayCreatedDto
    expect(created.plan).toMatchObject({ replayable: 1_000, ratePerSecond: 200, estimatedSeconds: 5 })
    await waitForJob(db.sql, created.id)
    expect(arrivals).toHaveLength(1_000)
    const start = arrivals[0].at
    // Skip the first second (the bucket's initial state, the executor's pickup), then count over three seconds.
    const inWindow = arrivals.filter((a) => a.at >= start + 1_000 && a.at < start + 4_000).length
    expect(inWindow / 3).toBeGreaterThanOrEqual(180)
    expect(inWindow / 3).toBeLessThanOrEqual(220)
    const overall = (999 * 1000) / (arrivals[999].at - start)
    expect(overall).toBeGreaterThanOrEqual(180)
    expect(overall).toBeLessThanOrEqual(220)
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
    // Let deliveries confirmed before the end reach the consumer; a publish after the end would show up below as an
    // arrival the job never counted as confirmed.
    await sleep(2_000)
    expect(job.status).toBe('cancelled')
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
