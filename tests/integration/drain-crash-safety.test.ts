import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel, ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { bySize } from '../helpers/soak'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { exited, spawnWorker } from '../helpers/worker-process'

const TOTAL = bySize(6_000, 20_000)
/** Least progress between two kills (plus as much again at random): at least three kills land mid-stream. */
const STEP = TOTAL / 12

// Rule: ack only after commit. SIGKILL can land anywhere (mid-batch, between commit and ack); afterwards every
// message must be stored exactly once and the DLQ must be empty.
describe('drainer crash safety', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: ConfirmChannel
  const dlq = uniqueName('crash_dlq')

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createConfirmChannel()
    await channel.assertQueue(dlq, { durable: true })
    const now = Math.floor(Date.now() / 1000)
    for (let i = 0; i < TOTAL; i++) {
      channel.sendToQueue(dlq, Buffer.from(JSON.stringify({ n: i, pad: 'x'.repeat(200) })), {
        messageId: `m-${i}`,
        contentType: 'application/json',
        headers: {
          'x-error-type': 'TimeoutException',
          'x-error-message': `call ${i} timed out`,
          'x-death': [{ queue: 'work', reason: 'rejected', count: 1, exchange: 'app', 'routing-keys': ['k'], time: { '!': 'timestamp', value: now } }],
        },
      })
      if (i % 2000 === 1999) await channel.waitForConfirms()
    }
    await channel.waitForConfirms()
  })

  afterAll(async () => {
    await channel?.deleteQueue(dlq).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('stores every message exactly once across repeated SIGKILLs', async () => {
    const env = { DATABASE_URL: db.url, LAZARUS_SOURCES: dlq, LAZARUS_DRAIN_BATCH: '250', LAZARUS_DRAIN_PREFETCH: '600', LAZARUS_DRAIN_FLUSH_MS: '20' }
    const stored = async () => (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters')).rows[0].n
    let kills = 0
    let killedWithProgress = 0
    // Kill while draining: each time wait until it made some progress beyond the last kill, then kill mid-stream.
    while (kills < 6) {
      const before = await stored().catch(() => 0)
      const worker = spawnWorker(env)
      const target = before + STEP + Math.floor(Math.random() * STEP)
      const reached = await waitFor(async () => (await stored().catch(() => 0)) >= Math.min(target, TOTAL) || worker.exitCode !== null, { timeoutMs: 60_000, intervalMs: 20, what: `progress past ${target}` }).catch(() => false)
      if (worker.exitCode !== null) throw new Error(`worker exited on its own:\n${worker.output()}`)
      worker.kill('SIGKILL')
      await exited(worker)
      kills++
      if (reached && (await stored()) < TOTAL) killedWithProgress++
      if ((await stored()) >= TOTAL) break
    }
    expect(killedWithProgress).toBeGreaterThanOrEqual(3)

    const finalWorker = spawnWorker(env)
    try {
      // No pause after this: whatever the worker still holds or stores late is counted below, after it has exited
      // (a message it held unacked is back in the queue, a duplicate it stored shows in max_seen).
      await waitFor(async () => (await stored()) >= TOTAL && (await queueDepth(dlq)) === 0, { timeoutMs: 120_000, what: 'everything drained' })
    } finally {
      finalWorker.kill('SIGTERM')
      await exited(finalWorker)
    }

    const { rows } = await db.sql.query<{ total: number; distinct_ids: number; max_seen: number; group_total: number; drained: number }>(
      `SELECT count(*)::int AS total, count(DISTINCT properties->>'messageId')::int AS distinct_ids, max(seen_count)::int AS max_seen,
         (SELECT sum(count)::int FROM error_groups) AS group_total, (SELECT drained_count::int FROM sources WHERE kind = 'dlq') AS drained
       FROM dead_letters`,
    )
    expect(rows[0]).toEqual({ total: TOTAL, distinct_ids: TOTAL, max_seen: 1, group_total: TOTAL, drained: TOTAL })
    expect(await queueDepth(dlq)).toBe(0)
  })
})
