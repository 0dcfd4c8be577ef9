import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getTypedHeaders } from '@/lib/server/platform/broker/typed-fields'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { uniqueName } from '../helpers/broker'
import { type ReplayBed, bulkRows, collect, openReplayBed, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

// An order-sensitive source: the replay pauses the entity, publishes its dead letters (marked x-lazarus-release so a
// guard lets them through), then the messages held for it meanwhile, in arrival order, then resumes the pause.
describe('replay with paused entities', () => {
  let db: TestDb
  let bed: ReplayBed
  let connection: ChannelModel
  let executor: ReplayExecutor | undefined
  const exchange = uniqueName('rel_x')
  const work = uniqueName('rel_work')

  beforeAll(async () => {
    bed = await openReplayBed({ exchange, work, key: 'k' })
    ;({ db, connection } = bed)
  })

  afterAll(async () => {
    await executor?.stop()
    await bed?.close()
  })

  it('replays the entity, then releases what was held for it, then resumes', async () => {
    const dlqSource = await storeBulk(db.sql, uniqueName('rel_dlq'), bulkRows(2, { originExchange: exchange, originKey: 'k', originQueue: work, entity: () => 'order-7' }))
    await db.sql.query(`UPDATE sources SET order_sensitive = true, entity_key = '{"kind":"jsonPointer","pointer":"/orderId"}' WHERE id = $1::bigint`, [dlqSource])
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { source: dlqSource } } }, actor: 'erin' })) as ReplayCreatedDto
    expect(created.plan).toMatchObject({ pauseEntities: true, entities: { count: 1, orderSensitive: 1 } })
    const { rows: pauses } = await db.sql.query<{ id: string; queue: string; entity_key: string; status: string }>(
      'SELECT id::text, queue, entity_key, status FROM pauses WHERE replay_job_id = $1::bigint',
      [created.id],
    )
    expect(pauses).toEqual([{ id: expect.any(String), queue: work, entity_key: 'order-7', status: 'active' }])

    // While paused, a guard held two newer messages of the entity (they arrive now, while the pause is open: a held
    // message no pause explains would stay held, flagged held-unexpected).
    const holdQueue = uniqueName('rel_hold')
    const held = bulkRows(2, { originExchange: '', originKey: '', originQueue: work, start: 50, entity: () => 'order-7' }).map((r) => ({
      ...r,
      failedAt: new Date(),
      status: 'held' as const,
      headersJson: JSON.stringify({ 'x-n': JSON.parse(r.headersJson)['x-n'], 'x-death': { t: 'A', v: [] } }),
    }))
    const holdSource = await storeBulk(db.sql, holdQueue, held)
    await db.sql.query(`UPDATE sources SET kind = 'hold' WHERE id = $1::bigint`, [holdSource])
    await db.sql.query('UPDATE dead_letters SET held_from = $2 WHERE source_id = $1::bigint', [holdSource, work])

    executor = startTestExecutor(db)
    const job = await waitForJob(db.sql, created.id)
    expect(job).toMatchObject({ status: 'completed', total: 4, confirmed: 2, released: 2, failed: 0, unroutable: 0 })

    const received = await collect(connection, work, 4)
    expect(received).toHaveLength(4)
    const n = (m: (typeof received)[number]) => getTypedHeaders(m.properties.headers)?.['x-n']
    expect(received.map(n)).toEqual([{ t: 'I', v: 0 }, { t: 'I', v: 1 }, { t: 'I', v: 50 }, { t: 'I', v: 51 }])
    const headers = received.map((m) => m.properties.headers ?? {})
    for (const h of headers) expect(h['x-lazarus-release']).toBe(pauses[0].id)
    // Replayed dead letters carry the lineage; released holds go back as they were, x-death included.
    expect(headers.slice(0, 2).map((h) => h['x-lazarus-replay-count'])).toEqual([1, 1])
    expect(headers.slice(2).map((h) => [h['x-lazarus-origin-id'], Object.keys(h).includes('x-death')])).toEqual([[undefined, true], [undefined, true]])
    expect(received.slice(2).map((m) => m.fields.exchange)).toEqual(['', ''])

    const { rows: statuses } = await db.sql.query<{ entity_key: string; status: string; source_id: string }>('SELECT entity_key, status, source_id::text FROM dead_letters JOIN message_statuses ON dead_letter_id = id ORDER BY id')
    expect(statuses.map((s) => [s.entity_key, s.status])).toEqual([
      ['order-7', 'replayed'], ['order-7', 'replayed'], ['order-7', 'replayed'], ['order-7', 'replayed'],
    ])
    const { rows: after } = await db.sql.query<{ status: string }>('SELECT status FROM pauses WHERE id = $1::bigint', [pauses[0].id])
    expect(after[0].status).toBe('resumed')
  })
})
