import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import * as replays from '@/app/api/replays/route'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayDryRunDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName } from '../helpers/broker'
import { bulkRows, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

/**
 * A default-exchange target routes to the queue its routing key names, and nowhere when no such queue exists (an empty
 * key names none: the management API's "/api/queues/{vhost}/" with an empty name lists every queue, which once made it
 * look like one). The plan shows such a target unroutable and refuses to start it, the API with a 422 saying why.
 */
describe('unroutable default-exchange targets', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  const work = uniqueName('unroutable_work')
  const gone = uniqueName('unroutable_gone')
  const ids: Record<'empty' | 'gone' | 'work', string[]> = { empty: [], gone: [], work: [] }

  const plan = async (selection: string[], target?: ReplayTarget) =>
    ((await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: selection }, target, dryRun: true }, actor: 'op' })) as ReplayDryRunDto).plan

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertQueue(work, { durable: false })
    // Origins a publisher's x-death headers can claim: an empty queue name, a queue that no longer exists, a real one.
    await storeBulk(db.sql, uniqueName('unroutable_dlq'), [
      ...bulkRows(2, { originExchange: '', originKey: '', originQueue: '', start: 0 }),
      ...bulkRows(2, { originExchange: '', originKey: gone, originQueue: gone, start: 10 }),
      ...bulkRows(1, { originExchange: '', originKey: work, originQueue: work, start: 20 }),
    ])
    const { rows } = await db.sql.query<{ id: string; n: number }>(`SELECT id::text, (convert_from(body, 'UTF8')::jsonb->>'n')::int AS n FROM dead_letters ORDER BY id`)
    for (const r of rows) ids[r.n < 10 ? 'empty' : r.n < 20 ? 'gone' : 'work'].push(r.id)
  })

  afterAll(async () => {
    await channel?.deleteQueue(work).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('plans the default exchange with an empty routing key as unroutable and refuses it, through the API too', async () => {
    const custom = await plan(ids.empty, { type: 'custom', exchange: '', routingKey: '' })
    expect(custom).toMatchObject({ replayable: 2, canRun: false, targets: [{ exchange: '', routingKey: '', queues: 0, queueNames: [] }] })
    expect(custom.warnings.join(' ')).toMatch(/Nothing is bound to the default exchange for key "": its 2 messages will come back unroutable/)
    expect((await plan(ids.empty, { type: 'queue' })).canRun).toBe(false)

    const response = await replays.POST(
      new Request('http://lazarus.test/api/replays', {
        method: 'POST',
        headers: { ...ADMIN_AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ selection: { ids: ids.empty }, target: { type: 'custom', exchange: '', routingKey: '' } }),
      }),
      { params: Promise.resolve({}) },
    )
    expect(response.status).toBe(422)
    const body = await response.json()
    expect(body.error.message).toMatch(/unroutable: no queue is named "" \(the default exchange routes to the queue the routing key names\)/)
    expect(body.error.details.plan).toMatchObject({ canRun: false })
    const { rows } = await db.sql.query('SELECT 1 FROM replay_jobs')
    expect(rows).toHaveLength(0)
  })

  it('refuses a default-exchange target whose routing key names no existing queue, and runs one that does', async () => {
    const missing = await plan(ids.gone, { type: 'queue' })
    expect(missing).toMatchObject({ canRun: false, targets: [{ exchange: '', routingKey: gone, queues: 0 }] })
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: ids.gone }, target: { type: 'queue' } }, actor: 'op' })).rejects.toMatchObject({
      code: 'unprocessable',
      message: expect.stringMatching(new RegExp(`no queue is named "${gone}"`)),
    })
    expect(await plan(ids.work, { type: 'queue' })).toMatchObject({ canRun: true, targets: [{ routingKey: work, queues: 1, queueNames: [work] }] })
    // Mixed: the routable messages still go; the plan warns about the others, which stay dead.
    const mixed = await plan([...ids.gone, ...ids.work], { type: 'queue' })
    expect(mixed.canRun).toBe(true)
    expect(mixed.warnings.join(' ')).toMatch(/will come back unroutable/)
  })
})
