import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { createGuard, type Guard } from '@/packages/guard/src'
import { createPause } from '@/lib/server/pauses/create-pause'
import { recordGuardHeartbeat } from '@/lib/server/pauses/guard-heartbeat'
import { guardStatus } from '@/lib/server/pauses/guard-status'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { resumePause } from '@/lib/server/pauses/resume-pause'
import type { PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { uniqueName, waitFor } from '../helpers/broker'
import { servePausesApi, type PollRequest } from '../helpers/pause-api-server'
import { isolatePauseTopology } from '../helpers/pause-topology'
import type { TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

/**
 * "Guards listening: N, up to date: N" (docs/ARCHITECTURE.md#pause-hold-release, "Who listens"), with real guards
 * (packages/guard on the real broker) polling a loopback Lazarus that records their heartbeats.
 */
describe('who listens: guards counted from their polls', () => {
  let db: TestDb
  let runtime: PauseRuntime
  let api: Awaited<ReturnType<typeof servePausesApi>>
  let app: ChannelModel
  let sourceId: string
  const work = uniqueName('listen_work')
  const guards: Guard[] = []
  /** While true the loopback Lazarus answers the guards' polls with 503 (they cannot read, so cannot catch up). */
  let unreachable = false

  async function startGuard(): Promise<Guard> {
    const guard = createGuard({ ...topology.guardOptions, connection: app, queue: work, lazarusUrl: api.url, pollIntervalMs: 500, retryDelayMs: 50, onError: () => {} })
    guards.push(guard)
    const channel = await app.createChannel()
    await guard.consume(channel, (message) => message && channel.ack(message))
    return guard
  }

  const status = async () => {
    const { queues } = await guardStatus({ db, sourceId, queue: work })
    expect(queues).toHaveLength(1)
    const [{ listening, upToDate }] = queues
    return { listening, upToDate }
  }
  const until = (expected: { listening: number; upToDate: number }, what: string) =>
    waitFor(async () => {
      const now = await status()
      return now.listening === expected.listening && now.upToDate === expected.upToDate
    }, { what, timeoutMs: 5_000 })

  beforeAll(async () => {
    ;({ db, runtime, app } = await topology.startTestbed([work]))
    sourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [uniqueName('listen_dlq')])).rows[0].id
    api = await servePausesApi({ db, gate: (_poll: PollRequest) => (unreachable ? 503 : null) })
  })

  afterAll(async () => {
    for (const guard of guards) await guard.close().catch(() => {})
    await runtime?.stop()
    await api?.close()
    if (app) {
      const ch = await app.createChannel()
      await ch.deleteQueue(work).catch(() => {})
      await app.close().catch(() => {})
    }
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  it('counts guards as they start, fall behind, catch up and stop', async () => {
    expect(await status()).toEqual({ listening: 0, upToDate: 0 })

    // A guard starts: its first poll makes it listening; the poll after it confirms the version it read.
    const a = await startGuard()
    await until({ listening: 1, upToDate: 1 }, 'the first guard to listen, up to date')
    const heldByA = async () =>
      (await db.sql.query<{ v: string }>(`SELECT registry_version::text AS v FROM guard_heartbeats WHERE instance = $1`, [a.instanceId])).rows[0].v

    // A pause while Lazarus cannot answer it: it still listens (it polled a moment ago) but holds an older version.
    unreachable = true
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-7', reason: 'listeners' }, actor: 'ann', allowAnyQueue: true })
    expect(await status()).toEqual({ listening: 1, upToDate: 0 })
    expect(Number(await heldByA())).toBeLessThan(pause.version)
    // The people's list says the same beside the pause.
    expect((await listPauses({ db, status: 'active' })).guards).toEqual([{ vhost: '/', queue: work, listening: 1, upToDate: 0 }])

    // Lazarus answers again: the guard reads the list at its next poll (every 500 ms here) and says so in the one after.
    unreachable = false
    await until({ listening: 1, upToDate: 1 }, 'the guard to catch up')
    expect(Number(await heldByA())).toBeGreaterThanOrEqual(pause.version)
    expect(a.pauses().map((p) => p.id)).toEqual([pause.id])

    // A second guard on the same queue.
    const b = await startGuard()
    await until({ listening: 2, upToDate: 2 }, 'two guards')

    // A guard older than 2.1 says no version: it listens, but nobody can tell it is up to date.
    await recordGuardHeartbeat({ sql: db.sql, beat: { vhost: '/', queue: work, instance: 'old-host-1-00000000', guardVersion: '2.0.0' } })
    expect(await status()).toEqual({ listening: 3, upToDate: 2 })
    await db.sql.query(`DELETE FROM guard_heartbeats WHERE instance = 'old-host-1-00000000'`)

    // A resume is a change too; both guards catch up with it.
    await resumePause({ db, control: composition().control, id: pause.id, actor: 'ann' })
    await until({ listening: 2, upToDate: 2 }, 'both guards to hear the resume')
    expect(a.pauses()).toEqual([])

    // A guard stops: its last poll ages past two minutes (played by moving its heartbeat back in time).
    await a.close()
    await db.sql.query(`UPDATE guard_heartbeats SET last_seen_at = now() - interval '121 seconds' WHERE instance = $1`, [a.instanceId])
    expect(await status()).toEqual({ listening: 1, upToDate: 1 })
    await b.close()
    await db.sql.query(`UPDATE guard_heartbeats SET last_seen_at = now() - interval '121 seconds' WHERE instance = $1`, [b.instanceId])
    expect(await status()).toEqual({ listening: 0, upToDate: 0 })
  })

  it('asks about every source at once, or about the queue a pause would take by default', async () => {
    const other = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ($1) RETURNING id::text`, [uniqueName('listen_none')])).rows[0].id
    // Neither source has dead letters naming their consumer queue: there is no default queue to count guards on.
    expect(await guardStatus({ db, sourceId: other })).toEqual({ queues: [] })
    expect((await guardStatus({ db })).queues).toEqual([])
    // A source outside the caller's scope is not found.
    await expect(guardStatus({ db, sourceId: other, sourceIds: [sourceId] })).rejects.toMatchObject({ code: 'not_found' })
  })
})
