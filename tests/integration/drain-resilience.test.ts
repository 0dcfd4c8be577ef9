import { execFileSync } from 'node:child_process'
import { ADMIN_AUTH } from '../helpers/auth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel, ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { drainQueues, storedCount } from '../helpers/drainer'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import * as sourcesRoute from '@/app/api/sources/route'

const MANAGEMENT = 'http://127.0.0.1:15672'
const auth = { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` }

async function closeConnectionsNamed(name: string): Promise<number> {
  const connections = (await (await fetch(`${MANAGEMENT}/api/connections`, { headers: auth })).json()) as { name: string; client_properties?: { connection_name?: string } }[]
  const mine = connections.filter((c) => c.client_properties?.connection_name === name)
  for (const c of mine) await fetch(`${MANAGEMENT}/api/connections/${encodeURIComponent(c.name)}`, { method: 'DELETE', headers: auth })
  return mine.length
}

describe('drainer resilience', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: ConfirmChannel
  let drainer: Drainer
  const first = uniqueName('resilient_a')
  const second = uniqueName('resilient_b')
  let ids: Record<string, string>

  // Confirmed publishes: a message the broker never accepted would be the test's loss, not the drainer's.
  const publish = async (queue: string, count: number, tag: string) => {
    for (let i = 0; i < count; i++) channel.sendToQueue(queue, Buffer.from(`${tag}-${i}`), { messageId: `${tag}-${i}`, persistent: true })
    await channel.waitForConfirms()
  }

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createConfirmChannel()
    await channel.assertQueue(first, { durable: true })
    await channel.assertQueue(second, { durable: true })
    ;({ drainer, sourceIds: ids } = await drainQueues(db, [first, second], { batch: 50 }))
  })

  afterAll(async () => {
    await drainer?.stop()
    const cleanup = await brokerConnection()
    const ch = await cleanup.createChannel()
    for (const q of [first, second]) await ch.deleteQueue(q).catch(() => {})
    await cleanup.close()
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('reconnects and consumes again after its connection is closed by the broker', async () => {
    await publish(first, 100, 'before')
    await waitFor(async () => (await storedCount(db.sql, ids[first])) === 100 || null, { what: '100 stored' })
    // The management API lists a new connection only after its next statistics tick (5 s by default).
    const closed = await waitFor(async () => (await closeConnectionsNamed('lazarus-drainer')) || null, { what: 'drainer connection listed', timeoutMs: 20_000, intervalMs: 500 })
    expect(closed).toBeGreaterThan(0)
    await publish(first, 100, 'after-close')
    await waitFor(async () => (await storedCount(db.sql, ids[first])) === 200 || null, { what: '200 stored after reconnect', timeoutMs: 30_000 })
    expect(drainer.status().state).toBe('running')
  })

  it('reports a deleted queue, keeps draining the others, and resumes when the queue is back', async () => {
    await channel.deleteQueue(second)
    await waitFor(async () => {
      const { rows } = await db.sql.query<{ last_error: string | null }>('SELECT last_error FROM sources WHERE id = $1::bigint', [ids[second]])
      return rows[0].last_error?.includes(second) || null
    }, { what: 'deleted queue reported' })
    const listed = await (await sourcesRoute.GET(new Request('http://x/api/sources', { headers: ADMIN_AUTH }), { params: Promise.resolve({}) })).json()
    const reported = listed.sources.find((s: { queue: string }) => s.queue === second)
    expect(reported.error).toMatch(/deleted|does not exist/)

    const firstBefore = await storedCount(db.sql, ids[first])
    await publish(first, 10, 'while-b-gone')
    await waitFor(async () => (await storedCount(db.sql, ids[first])) === firstBefore + 10 || null, { what: 'first queue still drained' })

    await channel.assertQueue(second, { durable: true })
    await publish(second, 5, 'b-back')
    await waitFor(async () => (await storedCount(db.sql, ids[second])) === 5 || null, { what: 'second queue drained again', timeoutMs: 30_000 })
    await waitFor(async () => {
      const { rows } = await db.sql.query<{ last_error: string | null }>('SELECT last_error FROM sources WHERE id = $1::bigint', [ids[second]])
      return rows[0].last_error === null || null
    }, { what: 'error cleared' })
  })

  it('survives a broker restart without losing persistent messages', async () => {
    // Counted, not assumed: this case must not depend on how the ones before it went.
    const before = await storedCount(db.sql, ids[first])
    const expected = before + 250
    await publish(first, 200, 'pre-restart')
    execFileSync('rabbitmqctl', ['stop_app'], { stdio: 'ignore' })
    try {
      await waitFor(async () => drainer.status().state === 'broker-unavailable' || null, { what: 'drainer notices', timeoutMs: 30_000 })
    } finally {
      execFileSync('rabbitmqctl', ['start_app'], { stdio: 'ignore' })
    }
    connection = await waitFor(async () => brokerConnection().catch(() => null), { what: 'broker back', timeoutMs: 60_000, intervalMs: 500 })
    channel = await connection.createConfirmChannel()
    await publish(first, 50, 'post-restart')
    await waitFor(async () => (await storedCount(db.sql, ids[first])) === expected || null, { what: `all ${expected} stored after restart`, timeoutMs: 60_000 }).catch(async (error) => {
      throw new Error(`${error.message}: stored ${await storedCount(db.sql, ids[first])}, depth ${await queueDepth(first)}, drainer ${JSON.stringify(drainer.status())}`)
    })
    expect(await queueDepth(first)).toBe(0)
    const { rows } = await db.sql.query<{ n: number; distinct_ids: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT properties->>'messageId')::int AS distinct_ids FROM dead_letters WHERE source_id = $1::bigint`,
      [ids[first]],
    )
    expect(rows[0]).toEqual({ n: expected, distinct_ids: expected })
  })
})
