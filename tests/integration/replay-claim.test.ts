import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getMessage } from '@/lib/server/messages/get-message'
import { createReplay } from '@/lib/server/replay/create-replay'
import { claimItems, recordOutcomes } from '@/lib/server/engines/replay-executor/job-store'
import { listReplayItems } from '@/lib/server/replay/list-replay-items'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName } from '../helpers/broker'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { bulkRows, jobState, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

/**
 * The executor's bookkeeping without a broker: a claim raises the job's claimed_through (the crash-safety mark) and
 * writes nothing per item, yet the items it took are reported in flight until their outcome; outcomes record when a
 * message was published, and only for those that were.
 */
describe('replay claims and outcomes', () => {
  let db: TestDb
  let job: ReplayCreatedDto
  let connection: ChannelModel
  const work = uniqueName('claim_work')
  const claim = (afterSeq: number, limit: number) => claimItems({ sql: db.sql, jobId: job.id, afterSeq, span: 1000, limit, maxBytes: 32 * 1024 * 1024 })
  const statuses = async () => (await listReplayItems({ db, id: job.id, query: { limit: 100 } })).items.map((i) => i.status)
  const claimedThrough = async () => (await db.sql.query<{ n: number }>('SELECT claimed_through AS n FROM replay_jobs WHERE id = $1::bigint', [job.id])).rows[0].n

  beforeAll(async () => {
    db = await createTestDb()
    // The failed queue exists (a plan to a missing one is refused); nothing publishes here.
    connection = await brokerConnection()
    await (await connection.createChannel()).assertQueue(work, { durable: false })
    await storeBulk(db.sql, uniqueName('claim_dlq'), bulkRows(5, { originExchange: 'amq.direct', originKey: 'k', originQueue: work }))
    const { rows } = await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups')
    job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId: rows[0].id }, target: { type: 'queue' } }, actor: 'claim-test' })) as ReplayCreatedDto
  })
  afterAll(async () => {
    await (await connection?.createChannel())?.deleteQueue(work).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it('takes items in publish order with their messages and marks them in flight through the job alone', async () => {
    const taken = await claim(0, 3)
    expect(taken.map((i) => i.seq)).toEqual([1, 2, 3])
    expect(taken.every((i) => i.row_status === 'replaying' && Buffer.isBuffer(i.body) && i.body.length === 1024)).toBe(true)
    expect(JSON.parse(taken[0].headers_json)['x-retries']).toEqual({ t: 'l', v: '3' })
    expect(await claimedThrough()).toBe(3)
    const { rows } = await db.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint GROUP BY 1', [job.id])
    expect(rows).toEqual([{ status: 'pending', n: 5 }])
    expect(await statuses()).toEqual(['in_flight', 'in_flight', 'in_flight', 'pending', 'pending'])
    expect((await listReplayItems({ db, id: job.id, query: { limit: 100, status: 'in_flight' } })).items.map((i) => i.id)).toEqual(['1', '2', '3'])
    expect((await listReplayItems({ db, id: job.id, query: { limit: 100, status: 'pending' } })).items.map((i) => i.id)).toEqual(['4', '5'])
    const detail = await getMessage({ db, id: taken[0].dead_letter_id })
    expect(detail.replays).toEqual([expect.objectContaining({ jobId: job.id, status: 'in_flight', publishedAt: null })])
  })

  it('records when published messages went out, counts only those as published, and never lowers the mark', async () => {
    const [first, second] = await claim(0, 2)
    const sentAt = Date.parse('2026-11-30T12:00:00.250Z')
    await recordOutcomes({
      sql: db.sql, jobId: job.id, actor: 'claim-test', rate: null,
      outcomes: [
        { seq: first.seq, groupId: first.group_id, sourceId: first.source_id, status: 'confirmed', error: null, publishedAt: sentAt },
        { seq: second.seq, groupId: second.group_id, sourceId: second.source_id, status: 'skipped', error: 'not published: test' },
      ],
    })
    // A claim from the start (a restarted run) takes the open items again, the one still in flight first.
    expect((await claim(0, 10)).map((i) => i.seq)).toEqual([3, 4, 5])
    expect(await claimedThrough()).toBe(5)
    await claim(0, 1)
    expect(await claimedThrough()).toBe(5)
    expect(await statuses()).toEqual(['confirmed', 'skipped', 'in_flight', 'in_flight', 'in_flight'])
    const { rows } = await db.sql.query<{ seq: number; published_at: Date | null }>('SELECT seq, published_at FROM replay_items WHERE job_id = $1::bigint AND seq <= 2 ORDER BY seq', [job.id])
    expect(rows.map((r) => r.published_at?.toISOString() ?? null)).toEqual(['2026-11-30T12:00:00.250Z', null])
    expect(await jobState(db.sql, job.id)).toMatchObject({ published: 1, confirmed: 1, skipped: 1 })
  })
})
