import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getConfig } from '@/lib/server/platform/config'
import { createRevision } from '@/lib/server/messages/create-revision'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { replaySettings } from '@/lib/server/replay/replay-settings'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import { uniqueName } from '../helpers/broker'
import { type ReplayBed, bulkRows, collect, openReplayBed, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

// docs/rabbitmq.md#size-limits: sizes are checked before publishing; a message that cannot go out is reported "cannot
// replay" and never takes the channel (or the rest of the job) down with it.
describe('replay size limits', () => {
  let db: TestDb
  let bed: ReplayBed
  let connection: ChannelModel
  let channel: Channel
  let executor: ReplayExecutor
  const exchange = uniqueName('lim_x')
  const work = uniqueName('lim_work')
  let ids: string[]
  const hugeHeaders = JSON.stringify({ 'x-exception-stacktrace': { t: 'S', v: 'at com.acme.Deep(Deep.java:1)\n'.repeat(2500) } })

  beforeAll(async () => {
    bed = await openReplayBed({ exchange, work, key: 'k' })
    ;({ db, connection, channel } = bed)
    const rows = bulkRows(5, { originExchange: exchange, originKey: 'k', originQueue: work })
    rows[2] = { ...rows[2], body: Buffer.alloc(4096, 'b') }
    rows[4] = { ...rows[4], headersJson: hugeHeaders }
    await storeBulk(db.sql, uniqueName('lim_dlq'), rows)
    ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters ORDER BY id')).rows.map((r) => r.id)
  })

  const full = uniqueName('lim_full')

  afterAll(async () => {
    await channel?.deleteQueue(full).catch(() => {})
    await executor?.stop()
    await bed?.close()
  })

  it('excludes oversized bodies and header tables in the plan', async () => {
    const settings = replaySettings(getConfig(), { maxBodyBytes: 2048 })
    const { plan } = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, dryRun: true }, actor: 'a', settings })) as ReplayDryRunDto
    expect(plan).toMatchObject({ matched: 5, replayable: 3, canRun: true })
    expect(plan.excluded).toEqual([
      { reason: 'too-large', count: 1, sampleIds: [ids[2]] },
      { reason: 'headers-too-large', count: 1, sampleIds: [ids[4]] },
    ])
  })

  it('reports what slipped past the plan as "cannot replay" and publishes the rest on the same channel', async () => {
    // Planned with a larger body limit than the executor's, and a header table that grew after planning.
    const loose = replaySettings(getConfig(), { maxBodyBytes: 1024 * 1024 })
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: ids.slice(0, 4) } }, actor: 'a', settings: loose })) as ReplayCreatedDto
    expect(created.plan.replayable).toBe(4)
    await db.sql.query('UPDATE dead_letters SET headers = $2::json WHERE id = $1::bigint', [ids[1], hugeHeaders])
    // Started only now: an executor polling meanwhile could claim the job before the header table grew.
    executor = startTestExecutor(db, { maxBodyBytes: 2048 })
    executor.wake()
    const job = await waitForJob(db.sql, created.id)
    expect(job).toMatchObject({ status: 'completed', confirmed: 2, skipped: 2, failed: 0 })
    const received = await collect(connection, work, 2)
    expect(received.map((m) => m.properties.messageId)).toEqual(['m-0', 'm-3'])

    const { rows } = await db.sql.query<{ id: string; status: string; status_reason: string | null }>('SELECT id::text, status, status_reason FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE id = ANY($1::bigint[]) ORDER BY id', [ids.slice(0, 4)])
    expect(rows.map((r) => r.status)).toEqual(['replayed', 'dead', 'dead', 'replayed'])
    expect(rows[1].status_reason).toMatch(/^cannot replay: header table too large/)
    expect(rows[2].status_reason).toMatch(/^too large: body of 4096 bytes/)
  })

  it('leaves a message the broker nacks (a full queue refusing publishes) dead, with the reason', async () => {
    await channel.assertQueue(full, { durable: false, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } })
    const rows = bulkRows(3, { originExchange: '', originKey: full, originQueue: full, start: 500 })
    const source = await storeBulk(db.sql, uniqueName('lim_dlq_full'), rows)
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { filter: { source } }, target: { type: 'queue' }, ratePerSecond: 20 }, actor: 'a' })) as ReplayCreatedDto
    executor.wake()
    const job = await waitForJob(db.sql, created.id)
    expect(job).toMatchObject({ status: 'completed', confirmed: 1, failed: 2 })
    const { rows: after } = await db.sql.query<{ status: string; status_reason: string | null }>('SELECT status, status_reason FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE source_id = $1::bigint ORDER BY id', [source])
    expect(after.map((r) => [r.status, r.status_reason])).toEqual([['replayed', null], ['dead', 'nacked by the broker'], ['dead', 'nacked by the broker']])
  })

  it('sizes an edited message by its newest revision, which is what a replay sends', async () => {
    // Still dead from the tests above: ids[1] and ids[4] with a header table over 64 KiB, ids[2] with a 4096-byte body.
    const edit = (id: string, input: Parameters<typeof createRevision>[0]['input']) => createRevision({ db, id, input, actor: 'a', maxBodyBytes: 1 << 20 })
    await edit(ids[2], { body: { kind: 'json', text: '{"n":2,"trimmed":true}' } }) // shrinks the body under the limit
    await edit(ids[4], { headers: [{ name: 'note', value: { t: 'S', v: 'short' } }] }) // drops the huge header table
    await edit(ids[1], { headers: [], body: { kind: 'json', text: JSON.stringify({ n: 1, pad: 'p'.repeat(3000) }) } }) // grows past it
    const settings = replaySettings(getConfig(), { maxBodyBytes: 2048 })
    const { plan } = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [ids[1], ids[2], ids[4]] }, dryRun: true }, actor: 'a', settings })) as ReplayDryRunDto
    expect(plan).toMatchObject({ matched: 3, replayable: 2 })
    expect(plan.excluded).toEqual([{ reason: 'too-large', count: 1, sampleIds: [ids[1]] }])
  })
})
