import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { HELD_ENTITY_HEADER, HELD_FROM_HEADER, HELD_ID_HEADER, RELEASE_HEADER } from '@/packages/guard/src/protocol'
import { createPause } from '@/lib/server/pauses/create-pause'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { resumePause } from '@/lib/server/pauses/resume-pause'
import { startPauseRuntime, type PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { collect, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

type HeldRow = { id: string; n: number; entity_key: string | null; flags: string[]; status: string; released: number }

/**
 * lazarus.hold as an attack surface: any application that may publish there (every guard's does) can write
 * x-lazarus-held-from. Lazarus stores every such message, but sends one back only to a queue that had a pause of its
 * entity open within ten minutes of its arrival; the others stay held, flagged held-unexpected, for an operator.
 */
describe('held messages no pause explains are stored, flagged and never released', () => {
  let db: TestDb
  let runtime: PauseRuntime
  let drainer: Drainer
  let executor: ReplayExecutor
  let app: ChannelModel
  let sourceId: string
  const dlq = uniqueName('hsec_dlq')
  const queues: string[] = [dlq]

  async function newQueue(prefix: string): Promise<string> {
    const queue = uniqueName(prefix)
    const ch = await app.createChannel()
    await ch.assertQueue(queue, { durable: false })
    await ch.close()
    queues.push(queue)
    return queue
  }

  /** What any application may publish to lazarus.hold: a message naming the queue it wants to end up in. */
  async function hold(heldFrom: string, entity: string | null, n: number) {
    const channel = await app.createConfirmChannel()
    const headers: Record<string, unknown> = { [HELD_FROM_HEADER]: heldFrom, [HELD_ID_HEADER]: `hold-${heldFrom}-${n}` }
    if (entity !== null) headers[HELD_ENTITY_HEADER] = entity
    channel.publish(topology.hold, '', Buffer.from(JSON.stringify({ orderId: entity, n })), { contentType: 'application/json', headers })
    await channel.waitForConfirms()
    await channel.close()
  }

  async function heldFrom(queue: string): Promise<HeldRow[]> {
    const { rows } = await db.sql.query<HeldRow>(
      `SELECT d.id::text, (convert_from(d.body, 'UTF8')::jsonb->>'n')::int AS n, d.entity_key, d.flags, st.status,
         (SELECT count(*)::int FROM replay_items i WHERE i.dead_letter_id = d.id) AS released
       FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id WHERE d.held_from = $1 ORDER BY d.id`,
      [queue],
    )
    return rows
  }

  const pause = (queue: string, entityKey: string | null) => createPause({ db, control: composition().control, input: { sourceId, queue, entityKey, reason: 'test' }, actor: 'ann', allowAnyQueue: true })

  beforeAll(async () => {
    topology.assertConfigured()
    db = await createTestDb()
    runtime = await startPauseRuntime({ db, control: composition().brokers.control, config: topology.config, sweepMs: 200 })
    await runtime.topologyReady
    app = await brokerConnection()
    const setup = await app.createChannel()
    await setup.assertQueue(dlq, { durable: false })
    await setup.close()
    // Drains the hold queue (registered by the runtime) like any worker does.
    const drain = await drainQueues(db, [dlq], { entityKey: { kind: 'jsonPointer', pointer: '/orderId' } })
    drainer = drain.drainer
    sourceId = drain.sourceIds[dlq]
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await runtime?.stop()
    if (app) {
      const ch = await app.createChannel()
      for (const q of queues) await ch.deleteQueue(q).catch(() => {})
      await app.close().catch(() => {})
    }
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  it('a forged hold into a queue that never had a pause is stored held, flagged held-unexpected, and never delivered to it', async () => {
    const victim = await newQueue('hsec_victim')
    await hold(victim, 'order-1', 1)
    await hold(victim, null, 2)
    const rows = await waitFor(async () => {
      const r = await heldFrom(victim)
      return r.length === 2 && r
    }, { what: 'both forged holds stored' })
    expect(rows.map((r) => [r.n, r.status, r.flags])).toEqual([
      [1, 'held', ['held-unexpected']],
      [2, 'held', ['held-unexpected']],
    ])

    // Two straggler sweeps later nothing went out.
    await runtime.swept()
    await runtime.swept()
    expect((await heldFrom(victim)).map((r) => [r.status, r.released])).toEqual([['held', 0], ['held', 0]])
    expect(await queueDepth(victim)).toBe(0)

    // A pause of that queue created afterwards does not adopt them: its resume has nothing of its own to release.
    const later = await pause(victim, null)
    expect(later.held).toBe(0)
    expect((await resumePause({ db, control: composition().control, id: later.id, actor: 'ann' })).status).toBe('resumed')
    await runtime.swept()
    expect((await heldFrom(victim)).map((r) => [r.status, r.released])).toEqual([['held', 0], ['held', 0]])
    expect(await queueDepth(victim)).toBe(0)
  })

  it('a hold arriving 5 minutes after its pause ended goes back to the queue; 11 minutes after, it stays held and flagged', async () => {
    const work = await newQueue('hsec_work')
    const ended11 = await pause(work, 'order-11')
    await resumePause({ db, control: composition().control, id: ended11.id, actor: 'ann' })
    const ended5 = await pause(work, 'order-5')
    await resumePause({ db, control: composition().control, id: ended5.id, actor: 'ann' })
    const setTimes = `UPDATE pauses SET created_at = now() - interval '40 minutes', resumed_at = now() - $2::int * interval '1 minute' WHERE id = $1::bigint`
    await db.sql.query(setTimes, [ended11.id, 11])
    await db.sql.query(setTimes, [ended5.id, 5])

    await hold(work, 'order-11', 1)
    await hold(work, 'order-5', 2)
    const [back] = await collect(app, work, 1, 20_000)
    expect(JSON.parse(back.content.toString())).toEqual({ orderId: 'order-5', n: 2 })
    expect(back.properties.headers?.[RELEASE_HEADER]).toBe(ended5.id)

    // Once the release is recorded, a sweep more: it leaves the 11-minute hold alone.
    await waitFor(async () => (await heldFrom(work)).some((r) => r.entity_key === 'order-5' && r.status === 'replayed'), { what: 'the 5-minute hold recorded as released' })
    await runtime.swept()
    const rows = await heldFrom(work)
    expect(rows.map((r) => [r.entity_key, r.status, r.flags, r.released])).toEqual([
      ['order-11', 'held', ['held-unexpected'], 0],
      ['order-5', 'replayed', [], 1],
    ])
    expect(await queueDepth(work)).toBe(0)
  })

  it("a pause's ordered release sends back only the messages of its queue and entity", async () => {
    const work = await newQueue('hsec_ordered')
    const other = await newQueue('hsec_other')
    const paused = await pause(work, 'order-1')
    await hold(work, 'order-1', 1) // what a guard holds for this pause
    await hold(work, 'order-2', 2) // an entity of the same queue that was never paused
    await hold(other, 'order-1', 3) // the paused entity, but claiming another queue
    await hold(work, 'order-1', 4)
    await waitFor(async () => (await heldFrom(work)).length === 3 && (await heldFrom(other)).length === 1, { what: 'four holds stored' })
    expect((await heldFrom(work)).map((r) => [r.n, r.flags])).toEqual([[1, []], [2, ['held-unexpected']], [4, []]])
    expect((await heldFrom(other)).map((r) => r.flags)).toEqual([['held-unexpected']])
    // The pause counts only what it will send back.
    expect((await listPauses({ db, status: 'active' })).pauses.find((p) => p.id === paused.id)?.held).toBe(2)

    const resumed = await resumePause({ db, control: composition().control, id: paused.id, actor: 'ann' })
    expect(resumed.status).toBe('releasing')
    const job = await waitForJob(db.sql, resumed.replayJobId!)
    expect(job).toMatchObject({ status: 'completed', total: 2, released: 2 })
    const back = await collect(app, work, 2, 20_000)
    expect(back.map((m) => JSON.parse(m.content.toString()).n)).toEqual([1, 4])

    // A sweep after the release: it sent back nothing of the other entity or the other queue.
    await runtime.swept()
    expect((await heldFrom(work)).map((r) => [r.n, r.status])).toEqual([[1, 'replayed'], [2, 'held'], [4, 'replayed']])
    expect((await heldFrom(other)).map((r) => [r.status, r.released])).toEqual([['held', 0]])
    expect(await queueDepth(work)).toBe(0)
    expect(await queueDepth(other)).toBe(0)
  })
})
