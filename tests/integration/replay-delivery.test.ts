import { randomBytes } from 'node:crypto'
import { ADMIN_AUTH } from '../helpers/auth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { encodeTypedTable, getTypedHeaders, withTypedHeaders, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { getMessage } from '@/lib/server/messages/get-message'
import { createReplay } from '@/lib/server/replay/create-replay'
import { updateReplayTargetSettings } from '@/lib/server/replay/replay-target-settings'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { BROKER_HEADERS } from '@/lib/server/replay/publish-message'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import * as replaysRoute from '@/app/api/replays/route'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { collect, deadLetterThrough, declareWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { EVERY_BROKER_TYPE } from '../helpers/typed-headers'
import { composition } from '@/lib/server/platform/process/composition'

const MISSING_PREFIX = uniqueName('missing_x')

const typedHeaders: TypedTable = {
  'app-trace': { t: 'S', v: 'trace-1' },
  'retry-count': { t: 'l', v: '3' },
  ...EVERY_BROKER_TYPE,
  'x-error-type': { t: 'S', v: 'com.acme.PaymentDeclined' },
}

const properties = {
  contentType: 'application/octet-stream',
  contentEncoding: 'identity',
  correlationId: 'corr-1',
  messageId: 'msg-1',
  timestamp: 1764500000,
  type: 'payment.requested',
  appId: 'payments',
  priority: 3,
  deliveryMode: 2,
  replyTo: 'payments.replies',
  userId: 'guest',
  expiration: '600000',
}

type Stored = { id: string; headers: TypedTable; status: string; status_reason: string | null }

describe('replay delivery', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  let executor: ReplayExecutor
  const names = { exchange: uniqueName('src_x'), key: 'payment.requested', work: uniqueName('work'), dlq: uniqueName('dlq') }
  const fan = { exchange: uniqueName('fan_x'), key: 'k', work: uniqueName('fan_work'), other: uniqueName('fan_other') }
  const custom = { exchange: uniqueName('custom_x'), queue: uniqueName('custom_q') }
  const lonely = uniqueName('lonely_x')
  const body = randomBytes(3000)
  let sourceId: string

  const stored = async (where: string, params: unknown[] = []) =>
    (await db.sql.query<Stored>(`SELECT id::text, headers, status, status_reason FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE ${where} ORDER BY id`, params)).rows
  const storedCount = async () => (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters')).rows[0].n
  const replay = async (input: Parameters<typeof createReplay>[0]['input'], actor = 'alice') => (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input, actor })) as ReplayCreatedDto

  beforeAll(async () => {
    db = await createTestDb()
    // Custom targets name exchanges on the admin's allow-list only (the missing one: any name of that shape).
    await updateReplayTargetSettings({ db, input: { customTargetPatterns: [custom.exchange, lonely, `${MISSING_PREFIX}*`] }, actor: 'admin' })
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    // A second topology: the exchange routes the key to the failed queue and to another consumer's queue (fan-out).
    await declareWorkTopology(channel, { exchange: fan.exchange, key: fan.key, work: fan.work, dlq: names.dlq })
    await channel.assertQueue(fan.other, { durable: false })
    await channel.bindQueue(fan.other, fan.exchange, fan.key)
    await channel.assertExchange(custom.exchange, 'topic', { durable: false })
    await channel.assertQueue(custom.queue, { durable: false })
    await channel.bindQueue(custom.queue, custom.exchange, 'custom.#')
    await channel.assertExchange(lonely, 'direct', { durable: false })

    await deadLetterThrough(connection, { ...names, messages: [{ body, options: { ...properties, headers: withTypedHeaders(typedHeaders) } }] })
    await deadLetterThrough(connection, {
      exchange: fan.exchange, key: fan.key, work: fan.work,
      messages: Array.from({ length: 9 }, (_, i) => ({ body: Buffer.from(JSON.stringify({ n: i })), options: { messageId: `fan-${i}`, contentType: 'application/json' } })),
    })
    await channel.purgeQueue(fan.other)
    ;({ drainer, sourceIds: { [names.dlq]: sourceId } } = await drainQueues(db, [names.dlq]))
    await waitFor(async () => (await storedCount()) === 10, { what: '10 dead letters stored' })
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    for (const q of [names.work, names.dlq, fan.work, fan.other, custom.queue]) await channel?.deleteQueue(q).catch(() => {})
    for (const x of [names.exchange, fan.exchange, custom.exchange, lonely]) await channel?.deleteExchange(x).catch(() => {})
    await connection?.close()
    await db?.drop()
  })

  it('replays to the source exchange byte for byte, with lineage headers, and marks the message replayed', async () => {
    const [original] = await stored(`properties->>'messageId' = 'msg-1'`)
    expect(original.status).toBe('dead')
    const created = await replay({ selection: { ids: [original.id] } })
    expect(created.plan).toMatchObject({ matched: 1, replayable: 1, canRun: true, targets: [{ exchange: names.exchange, routingKey: names.key, queues: 1, queueNames: [names.work], fansOut: false, exists: true }] })
    const job = await waitForJob(db.sql, created.id)
    expect(job).toMatchObject({ status: 'completed', total: 1, published: 1, confirmed: 1, unroutable: 0, failed: 0 })

    const [received] = await collect(connection, names.work, 1)
    expect(received).toBeDefined()
    expect(received.fields.exchange).toBe(names.exchange)
    expect(received.fields.routingKey).toBe(names.key)
    expect(received.content.equals(body)).toBe(true)
    const { expiration, ...kept } = properties
    expect(expiration).toBeDefined()
    expect(received.properties).toMatchObject(kept)
    expect(received.properties.expiration).toBeUndefined()

    const { rows: items } = await db.sql.query<{ replay_id: string; status: string }>('SELECT replay_id, status FROM replay_items WHERE job_id = $1::bigint', [created.id])
    const typed = getTypedHeaders(received.properties.headers) ?? {}
    const { 'x-lazarus-origin-id': originId, 'x-lazarus-replay-id': replayId, 'x-lazarus-replay-count': count, 'x-lazarus-replayed-by': by, ...rest } = typed
    expect({ originId, replayId, count, by }).toEqual({
      originId: { t: 'S', v: original.id },
      replayId: { t: 'S', v: items[0].replay_id },
      count: { t: 'l', v: '1' },
      by: { t: 'S', v: 'alice' },
    })
    // Exactly the stored table minus the broker's headers, in the stored order, encoding to the same bytes.
    const expected = Object.fromEntries(Object.entries(original.headers).filter(([key]) => !BROKER_HEADERS.has(key)))
    expect(Object.keys(original.headers)).toContain('x-death')
    expect(Object.keys(original.headers)).toContain('x-first-death-queue')
    expect(Object.keys(rest)).toEqual(Object.keys(expected))
    expect(encodeTypedTable(rest).equals(encodeTypedTable(expected))).toBe(true)
    // And every header the application sent comes back with its AMQP type.
    for (const [key, value] of Object.entries(typedHeaders)) expect(rest[key], key).toEqual(value)
    expect(Object.keys(rest).filter((k) => k.startsWith('x-death') || k.startsWith('x-first-death'))).toEqual([])

    const [after] = await stored('id = $1::bigint', [original.id])
    expect(after.status).toBe('replayed')
    expect(items[0].status).toBe('confirmed')
    const detail = await getMessage({ db, id: original.id })
    expect(detail.replays).toMatchObject([{ jobId: created.id, status: 'confirmed', replayId: items[0].replay_id, exchange: names.exchange, routingKey: names.key, createdBy: 'alice' }])
    const { rows: audit } = await db.sql.query<{ action: string; actor: string; outcome: string }>(
      `SELECT action, actor, outcome FROM audit_log WHERE subject_type = 'replay' AND subject_id = $1 ORDER BY id`,
      [created.id],
    )
    expect(audit).toEqual([
      { action: 'replay.created', actor: 'alice', outcome: 'pending' },
      { action: 'replay.finished', actor: 'alice', outcome: 'completed' },
    ])
    const { rows: group } = await db.sql.query<{ replayed_count: string }>('SELECT replayed_count::text FROM error_groups g JOIN dead_letters d ON d.group_id = g.id WHERE d.id = $1::bigint', [original.id])
    expect(group[0].replayed_count).toBe('1')
  })

  it('reports a fan-out in the plan and refuses it without allowFanOut', async () => {
    const ids = (await stored(`properties->>'messageId' IN ('fan-0', 'fan-1', 'fan-2')`)).map((r) => r.id)
    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, dryRun: true }, actor: 'alice' })) as ReplayDryRunDto
    expect(dry.plan.targets).toEqual([
      expect.objectContaining({ exchange: fan.exchange, routingKey: fan.key, messages: 3, queues: 2, queueNames: [fan.other, fan.work].sort(), fansOut: true }),
    ])
    expect(dry.plan.canRun).toBe(false)
    expect(dry.plan.warnings.join(' ')).toMatch(/routes to 2 queues/)
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids } }, actor: 'alice' })).rejects.toThrow(AppError)
    const refused = await replaysRoute.POST(new Request('http://lazarus.test/api/replays', { method: 'POST', body: JSON.stringify({ selection: { ids } }), headers: ADMIN_AUTH }), { params: Promise.resolve({}) })
    expect(refused.status).toBe(422)
    expect((await refused.json()).error.message).toMatch(/allowFanOut/)
    expect((await stored(`id = ANY($1::bigint[])`, [ids])).map((r) => r.status)).toEqual(['dead', 'dead', 'dead'])
    const allowed = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, allowFanOut: true, dryRun: true }, actor: 'alice' })) as ReplayDryRunDto
    expect(allowed.plan.canRun).toBe(true)
  })

  it("replays to the failed queue only through the default exchange (target 'queue')", async () => {
    const ids = (await stored(`properties->>'messageId' IN ('fan-0', 'fan-1', 'fan-2')`)).map((r) => r.id)
    const created = await replay({ selection: { ids }, target: { type: 'queue' } })
    expect(created.plan.targets).toEqual([expect.objectContaining({ exchange: '', routingKey: fan.work, queues: 1, fansOut: false })])
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 3 })
    const received = await collect(connection, fan.work, 3)
    expect(received.map((m) => m.properties.messageId).sort()).toEqual(['fan-0', 'fan-1', 'fan-2'])
    expect(received.every((m) => m.fields.exchange === '')).toBe(true)
    expect(await queueDepth(fan.other)).toBe(0)
  })

  it("replays to a custom exchange and routing key (target 'custom')", async () => {
    const ids = (await stored(`properties->>'messageId' IN ('fan-3', 'fan-4', 'fan-5')`)).map((r) => r.id)
    const created = await replay({ selection: { ids }, target: { type: 'custom', exchange: custom.exchange, routingKey: 'custom.retry' } })
    expect(created.plan.targets).toEqual([expect.objectContaining({ exchange: custom.exchange, routingKey: 'custom.retry', queues: 1, queueNames: [custom.queue], fansOut: false })])
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 3 })
    const received = await collect(connection, custom.queue, 3)
    expect(received.map((m: ConsumeMessage) => m.fields.routingKey)).toEqual(['custom.retry', 'custom.retry', 'custom.retry'])
    expect(await queueDepth(fan.other)).toBe(0)
    expect(await queueDepth(fan.work)).toBe(0)
  })

  it('keeps every message dead as "unroutable" when nothing is bound for the key', async () => {
    const before = await storedCount()
    const ids = (await stored(`properties->>'messageId' IN ('fan-6', 'fan-7', 'fan-8')`)).map((r) => r.id)
    const created = await replay({ selection: { ids }, target: { type: 'custom', exchange: lonely, routingKey: 'nowhere' } })
    expect(created.plan.targets).toEqual([expect.objectContaining({ exchange: lonely, queues: 0, exists: true })])
    expect(created.plan.warnings.join(' ')).toMatch(/Nothing is bound/)
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 0, unroutable: 3 })

    const rows = await stored('id = ANY($1::bigint[])', [ids])
    expect(rows.map((r) => r.status)).toEqual(['dead', 'dead', 'dead'])
    for (const r of rows) expect(r.status_reason).toMatch(/^unroutable: 312 NO_ROUTE/)
    const { rows: items } = await db.sql.query<{ status: string; error: string }>('SELECT status, error FROM replay_items WHERE job_id = $1::bigint', [created.id])
    expect(items.map((i) => i.status)).toEqual(['unroutable', 'unroutable', 'unroutable'])
    expect(items[0].error).toContain(lonely)
    // Nothing disappeared: the stored copies are all there, and they can be replayed again.
    expect(await storedCount()).toBe(before)
    const again = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, target: { type: 'queue' }, dryRun: true }, actor: 'alice' })) as ReplayDryRunDto
    expect(again.plan.replayable).toBe(3)
    const detail = await getMessage({ db, id: ids[0] })
    expect(detail.statusReason).toMatch(/unroutable/)
    expect(detail.replays).toMatchObject([{ status: 'unroutable' }])
  })

  it('refuses a target exchange that does not exist', async () => {
    const ids = (await stored(`properties->>'messageId' = 'fan-6'`)).map((r) => r.id)
    const missing = `${MISSING_PREFIX}${randomBytes(4).toString('hex')}`
    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, target: { type: 'custom', exchange: missing, routingKey: 'k' }, dryRun: true }, actor: 'a' })) as ReplayDryRunDto
    expect(dry.plan).toMatchObject({ canRun: false, targets: [{ exchange: missing, exists: false, queues: 0 }] })
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, target: { type: 'custom', exchange: missing, routingKey: 'k' } }, actor: 'a' })).rejects.toMatchObject({ code: 'unprocessable' })
  })

  it('excludes messages that are not dead', async () => {
    const [original] = await stored(`properties->>'messageId' = 'msg-1'`)
    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId: (await db.sql.query<{ g: string }>('SELECT group_id::text AS g FROM dead_letters WHERE id = $1::bigint', [original.id])).rows[0].g }, dryRun: true }, actor: 'a' })) as ReplayDryRunDto
    expect(dry.plan.excluded).toContainEqual({ reason: 'not-dead', count: 1, sampleIds: [original.id] })
    expect(sourceId).toBeTruthy()
  })
})
