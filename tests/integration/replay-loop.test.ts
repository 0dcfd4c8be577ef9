import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { getMessage } from '@/lib/server/messages/get-message'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { deadLetterThrough, declareWorkTopology, deleteWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

const CAP = 5

// A consumer that always fails: every replay dies again and comes back through the DLQ carrying Lazarus' lineage
// headers. Each copy links to the one it was replayed from, and the cap (LAZARUS_REPLAY_CAP, default 5) ends the loop.
describe('replay loops', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  let executor: ReplayExecutor
  const names = { exchange: uniqueName('loop_x'), key: 'invoice.created', work: uniqueName('loop_work'), dlq: uniqueName('loop_dlq') }

  type Row = { id: string; status: string; lineage_origin_id: string | null; lineage_replay_id: string | null; replay_count: number }
  const rows = async () => (await db.sql.query<Row>('SELECT id::text, status, lineage_origin_id, lineage_replay_id, replay_count FROM dead_letters JOIN message_statuses ON dead_letter_id = id ORDER BY id')).rows

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    await deadLetterThrough(connection, { ...names, messages: [{ body: Buffer.from('{"invoice":"inv-1"}'), options: { messageId: 'inv-1', contentType: 'application/json', headers: { 'x-error-type': 'InvoiceRejected' } } }] })
    // From now on the application rejects everything it gets.
    const failing = await connection.createChannel()
    await failing.consume(names.work, (m) => m && failing.nack(m, false, false))
    ;({ drainer } = await drainQueues(db, [names.dlq]))
    await waitFor(async () => (await rows()).length === 1, { what: 'the first dead letter' })
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await deleteWorkTopology(channel, names)
    await connection?.close()
    await db?.drop()
  })

  it('links each copy that died again to the one it was replayed from, and refuses at the cap', async () => {
    const [root] = await rows()
    expect(root).toMatchObject({ lineage_origin_id: null, replay_count: 0, lineage_replay_id: null })
    let current = root
    for (let n = 1; n <= CAP; n++) {
      const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [current.id] } }, actor: 'loop-test' })) as ReplayCreatedDto
      expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 1 })
      const { rows: items } = await db.sql.query<{ replay_id: string }>('SELECT replay_id FROM replay_items WHERE job_id = $1::bigint', [created.id])
      const next = await waitFor(async () => (await rows()).find((r) => r.lineage_replay_id === items[0].replay_id), { what: `copy ${n} back in the DLQ`, timeoutMs: 20_000 })
      expect(next).toMatchObject({ status: 'dead', lineage_origin_id: root.id, replay_count: n })
      expect((await rows()).find((r) => r.id === current.id)?.status).toBe('replayed')

      const detail = await getMessage({ db, id: next.id })
      expect(detail.replayedFrom).toEqual({ messageId: current.id, jobId: created.id, replayId: items[0].replay_id })
      expect(detail.lineage).toEqual({ originId: root.id, replayCount: n })
      expect(detail.headers['x-lazarus-origin-id']).toBe(root.id)
      expect((await getMessage({ db, id: current.id })).replays).toMatchObject([{ jobId: created.id, status: 'confirmed' }])
      current = next
    }

    expect(await rows()).toHaveLength(CAP + 1)
    const plan = ((await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [current.id] }, dryRun: true }, actor: 'loop-test' })) as ReplayDryRunDto).plan
    expect(plan).toMatchObject({ matched: 1, replayable: 0, canRun: false, excluded: [{ reason: 'replay-cap', count: 1, sampleIds: [current.id] }] })
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [current.id] } }, actor: 'loop-test' })).rejects.toMatchObject({ code: 'unprocessable' })
    // The whole lineage at once: only the last copy is dead, and it is over the cap.
    const lineage = ((await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { status: 'dead' } }, dryRun: true }, actor: 'loop-test' })) as ReplayDryRunDto).plan
    expect(lineage.replayable).toBe(0)
  })
})
