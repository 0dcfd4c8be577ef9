import { randomUUID } from 'node:crypto'
import { AckPolicy, DeliverPolicy, jetstreamManager, type JetStreamManager, jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startJetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { buildJetStreamRow } from '@/lib/server/ingest/build-jetstream-row'
import { getConfig } from '@/lib/server/platform/config'
import { logger } from '@/lib/server/platform/log'
import { composition } from '@/lib/server/platform/process/composition'
import { createRevision } from '@/lib/server/messages/create-revision'
import { createReplay, type CreateReplayOptions } from '@/lib/server/replay/create-replay'
import { getReplay } from '@/lib/server/replay/get-replay'
import { ITEM_STATUS_SQL } from '@/lib/server/replay/item-status-sql'
import { replaySettings, type ReplaySettings } from '@/lib/server/replay/replay-settings'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import { waitFor } from '../helpers/broker'
import { createTestStream, NATS_URL, natsConnection, uniqueNatsName, type TestStream } from '../helpers/nats'
import { startTestExecutor, waitForJob } from '../helpers/replay'
import { bySize } from '../helpers/soak'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { exited, spawnWorker } from '../helpers/worker-process'

/**
 * Replays of JetStream failures against the real nats-server (docs/jetstream.md#replay): each copy goes to its subject
 * with its data and headers and a Nats-Msg-Id of its item, so the copies a crash makes Lazarus publish twice are
 * dropped by the stream's duplicate window, and counted.
 */
const ADVISORY_STREAM = uniqueNatsName('LZT_RPL_ADVISORIES')
const NATS = { LAZARUS_NATS_URL: [NATS_URL] }

type Copy = { subject: string; data: string; headers: Map<string, string[]> }

describe('JetStream replay', () => {
  let db: TestDb
  let nc: NatsConnection
  let jsm: JetStreamManager
  const streams: TestStream[] = []
  const settings = (overrides: Partial<ReplaySettings> = {}) => replaySettings(getConfig(), { nats: NATS, ...overrides })
  const replay = (options: Omit<CreateReplayOptions, 'db' | 'control' | 'replayWork' | 'actor'>) =>
    createReplay({ db, control: composition().control, replayWork: composition().replayWork, actor: 'js-replay-test', settings: settings(), ...options })

  const newStream = async () => {
    const stream = await createTestStream(jsm, { prefix: 'LZT_RPL' })
    streams.push(stream)
    return stream
  }
  const addSource = async (stream: string, consumer: string) =>
    (await db.sql.query<{ id: string }>(
      `INSERT INTO sources (vhost, queue, kind, stream, consumer) VALUES ('', $1, 'jetstream', $2, $3) RETURNING id::text`,
      [`${stream}/${consumer}`, stream, consumer],
    )).rows[0].id

  /** Failures as the capture stores them (build-jetstream-row.ts, storeBatch): `count` messages on `subject`. */
  const storeFailures = async (options: { sourceId: string; stream: string; subject: (i: number) => string; count: number; start?: number }) => {
    const rows = Array.from({ length: options.count }, (_, k) => {
      const i = (options.start ?? 0) + k
      const headerBlock = Buffer.from(`NATS/1.0\r\nX-Tag: blue\r\nX-Tag: green\r\nNats-Msg-Id: order-${i}\r\nNats-Expected-Last-Sequence: 7\r\nX-Order: ${i}\r\n\r\n`)
      return buildJetStreamRow({
        sourceLabel: `${options.stream}/worker`,
        // Far above the sequences the test's streams reach: a copy that fails again is a row of its own.
        failure: { kind: 'max-deliveries', advisoryId: randomUUID(), at: new Date(), stream: options.stream, consumer: 'worker', streamSeq: 1_000_000 + i, deliveries: 3, reason: null },
        message: { subject: options.subject(i), seq: 1_000_000 + i, time: new Date(), headerBlock, data: Buffer.from(JSON.stringify({ orderId: `o-${i}`, n: i })) },
        redelivered: false, maxBodyBytes: 1024 * 1024,
      })
    })
    for (let i = 0; i < rows.length; i += 1000) await storeBatch({ sql: db.sql, sourceId: options.sourceId, sourceLabel: `${options.stream}/worker`, rows: rows.slice(i, i + 1000) })
  }

  /** What a consumer of the stream that was fixed now receives: every message, acked. */
  const readAll = async (stream: string, consumer: string): Promise<Copy[]> => {
    await jsm.consumers.add(stream, { durable_name: consumer, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All })
    const reader = await jetstream(nc).consumers.get(stream, consumer)
    const copies: Copy[] = []
    for (;;) {
      const info = await jsm.consumers.info(stream, consumer)
      if (info.num_pending === 0 && info.num_ack_pending === 0) return copies
      for await (const msg of await reader.fetch({ max_messages: 500, expires: 1_000 })) {
        const headers = new Map<string, string[]>()
        for (const key of msg.headers?.keys() ?? []) headers.set(key, msg.headers!.values(key))
        copies.push({ subject: msg.subject, data: msg.string(), headers })
        msg.ack()
      }
    }
  }

  beforeAll(async () => {
    db = await createTestDb()
    nc = await natsConnection()
    jsm = await jetstreamManager(nc)
  })

  afterAll(async () => {
    for (const stream of streams) await stream.drop()
    await jsm?.streams.delete(ADVISORY_STREAM).catch(() => false)
    await nc?.close()
    await db?.drop()
  })

  it('publishes each copy to its subject with its data and headers, once, and the fixed consumer processes each once', async () => {
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    await storeFailures({ sourceId, stream: stream.name, subject: (i) => `${stream.subject}.order.${i % 2 ? 'created' : 'paid'}`, count: 40 })
    const executor = startTestExecutor(db, { nats: NATS })
    try {
      const created = (await replay({ input: { selection: { filter: { source: sourceId } }, confirmCount: 40, ratePerSecond: 500 } })) as ReplayCreatedDto
      expect(created.plan.targets).toEqual(expect.arrayContaining([
        expect.objectContaining({ broker: 'jetstream', routingKey: `${stream.subject}.order.created`, exists: true, stream: stream.name, messages: 20, fansOut: false, duplicateWindowSeconds: 120 }),
      ]))
      const job = await waitForJob(db.sql, created.id)
      expect(job).toMatchObject({ status: 'completed', confirmed: 40, unroutable: 0, failed: 0, skipped: 0 })
      expect((await getReplay({ db, id: created.id })).duplicates).toBe(0)
    } finally {
      await executor.stop()
    }
    const copies = await readAll(stream.name, 'fixed')
    expect(copies).toHaveLength(40)
    const { rows: stored } = await db.sql.query<{ id: string; data: string; subject: string; replay_id: string; status: string }>(
      `SELECT d.id::text, convert_from(d.body, 'UTF8') AS data, d.properties->>'subject' AS subject, i.replay_id, st.status
       FROM dead_letters d JOIN replay_items i ON i.dead_letter_id = d.id JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE d.source_id = $1::bigint`,
      [sourceId],
    )
    const byReplayId = new Map(stored.map((r) => [r.replay_id, r]))
    for (const copy of copies) {
      const original = byReplayId.get(copy.headers.get('Nats-Msg-Id')![0])!
      // Byte for byte, to the subject it failed on, multi-valued headers in order; the server's instructions gone.
      expect(copy).toMatchObject({ subject: original.subject, data: original.data })
      expect(copy.headers.get('X-Tag')).toEqual(['blue', 'green'])
      expect(copy.headers.has('Nats-Expected-Last-Sequence')).toBe(false)
      expect(copy.headers.get('x-lazarus-replay-id')).toEqual([original.replay_id])
      expect(copy.headers.get('x-lazarus-origin-id')).toEqual([original.id])
      expect(copy.headers.get('x-lazarus-replay-count')).toEqual(['1'])
      expect(original.status).toBe('replayed')
    }
    expect(new Set(copies.map((c) => c.headers.get('Nats-Msg-Id')![0])).size).toBe(40)
  })

  it('leaves out server subjects, keeps a subject no stream captures dead as unroutable, and asks before a fan-out', async () => {
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    const nowhere = `lzt-nowhere-${randomUUID().slice(0, 8)}.order`
    await storeFailures({ sourceId, stream: stream.name, subject: (i) => (i < 3 ? `${stream.subject}.order` : i < 5 ? nowhere : '$KV.lzt.order'), count: 6 })
    // Two consumers take the subject: a copy reaches the one that already processed the message, too.
    await jsm.consumers.add(stream.name, { durable_name: 'worker', ack_policy: AckPolicy.Explicit })
    await jsm.consumers.add(stream.name, { durable_name: 'audit', ack_policy: AckPolicy.Explicit, filter_subject: `${stream.subject}.>` })
    await jsm.consumers.add(stream.name, { durable_name: 'other', ack_policy: AckPolicy.Explicit, filter_subject: `${stream.subject}.elsewhere` })

    const dry = (await replay({ input: { selection: { filter: { source: sourceId } }, dryRun: true } })) as ReplayDryRunDto
    expect(dry.plan.excluded).toEqual([{ reason: 'target-refused', count: 1, sampleIds: [expect.any(String)] }])
    expect(dry.plan.targets).toEqual(expect.arrayContaining([
      expect.objectContaining({ routingKey: `${stream.subject}.order`, exists: true, queueNames: ['audit', 'worker'], fansOut: true }),
      expect.objectContaining({ routingKey: nowhere, exists: false }),
    ]))
    expect(dry.plan.warnings.join('\n')).toContain(`No stream captures subject "${nowhere}": its 2 messages will come back unroutable and stay dead.`)
    expect(dry.plan.warnings.join('\n')).toContain(`reaches 2 consumers of stream "${stream.name}" (audit, worker)`)
    expect(dry.plan.canRun).toBe(false)
    // The same selection through a NATS-less configuration: nothing to publish the JetStream messages with.
    const unset = (await replay({ input: { selection: { filter: { source: sourceId } }, dryRun: true }, settings: settings({ nats: null }) })) as ReplayDryRunDto
    expect(unset.plan.excluded).toEqual([{ reason: 'jetstream', count: 6, sampleIds: expect.any(Array) }])

    const executor = startTestExecutor(db, { nats: NATS })
    try {
      const created = (await replay({ input: { selection: { filter: { source: sourceId } }, allowFanOut: true, confirmCount: 5 } })) as ReplayCreatedDto
      expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 3, unroutable: 2, failed: 0 })
    } finally {
      await executor.stop()
    }
    const { rows } = await db.sql.query<{ subject: string; status: string; status_reason: string | null }>(
      `SELECT d.properties->>'subject' AS subject, st.status, st.status_reason FROM dead_letters d JOIN dead_letter_states st ON st.dead_letter_id = d.id
       WHERE d.source_id = $1::bigint AND st.status = 'dead'`,
      [sourceId],
    )
    expect(rows).toEqual([
      { subject: nowhere, status: 'dead', status_reason: `unroutable: no stream captures subject "${nowhere}"` },
      { subject: nowhere, status: 'dead', status_reason: `unroutable: no stream captures subject "${nowhere}"` },
    ])
  })

  it('publishes an edited message\'s revision in place of the original, with x-lazarus-revision', async () => {
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    await storeFailures({ sourceId, stream: stream.name, subject: () => `${stream.subject}.order`, count: 1 })
    const { rows } = await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE source_id = $1::bigint', [sourceId])
    await createRevision({ db, id: rows[0].id, actor: 'js-replay-test', maxBodyBytes: 1024 * 1024, input: { body: { kind: 'json', text: '{"orderId":"o-0","sku":"fixed"}' } } })
    const executor = startTestExecutor(db, { nats: NATS })
    try {
      const created = (await replay({ input: { selection: { ids: [rows[0].id] } } })) as ReplayCreatedDto
      expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 1 })
    } finally {
      await executor.stop()
    }
    const [copy] = await readAll(stream.name, 'fixed')
    expect(copy.data).toBe('{"orderId":"o-0","sku":"fixed"}')
    expect(copy.headers.get('x-lazarus-revision')).toEqual(['1'])
    expect(copy.headers.get('X-Tag')).toEqual(['blue', 'green'])
  })

  it('sends a custom subject only when the admin\'s allow-list names it', async () => {
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    await storeFailures({ sourceId, stream: stream.name, subject: () => `${stream.subject}.order`, count: 2 })
    const target = { type: 'custom' as const, exchange: '', routingKey: `${stream.subject}.replays.billing` }
    const refused = (await replay({ input: { selection: { filter: { source: sourceId } }, target, dryRun: true } })) as ReplayDryRunDto
    expect(refused.plan.excluded).toEqual([{ reason: 'target-refused', count: 2, sampleIds: expect.any(Array) }])
    // A message its stream had removed before the capture read it: a record without data, never sent anywhere.
    const gone = buildJetStreamRow({
      sourceLabel: `${stream.name}/worker`, redelivered: false, maxBodyBytes: 1024, message: null,
      failure: { kind: 'terminated', advisoryId: randomUUID(), at: new Date(), stream: stream.name, consumer: 'worker', streamSeq: 5_000_000, deliveries: 1, reason: null },
    })
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: `${stream.name}/worker`, rows: [gone] })
    const allowed = (await replay({ input: { selection: { filter: { source: sourceId } }, target, dryRun: true }, settings: settings({ environmentTargetPatterns: [`${stream.subject}.replays.*`] }) })) as ReplayDryRunDto
    expect(allowed.plan).toMatchObject({
      replayable: 2, excluded: [{ reason: 'no-origin', count: 1 }], targets: [expect.objectContaining({ broker: 'jetstream', routingKey: target.routingKey, exists: true })],
    })
  })

  it('drops the copies a SIGKILLed worker had published, by their Nats-Msg-Id, and counts them', async () => {
    const TOTAL = bySize(1_000, 10_000)
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    await storeFailures({ sourceId, stream: stream.name, subject: (i) => `${stream.subject}.order.${i % 10}`, count: TOTAL })
    // Every publish the server received, the dropped duplicates included: a core subscription sees them all.
    const published = new Map<string, number>()
    const watch = nc.subscribe(`${stream.subject}.>`, {
      callback: (_error, msg) => {
        const id = msg.headers?.get('Nats-Msg-Id') ?? ''
        published.set(id, (published.get(id) ?? 0) + 1)
      },
    })
    await nc.flush()
    const created = (await replay({ input: { selection: { filter: { source: sourceId } }, confirmCount: TOTAL, ratePerSecond: 400 } })) as ReplayCreatedDto
    const env = {
      DATABASE_URL: db.url, LAZARUS_NATS_URL: NATS_URL, LAZARUS_NATS_ADVISORY_STREAM: ADVISORY_STREAM, LAZARUS_NATS_CONSUMER: 'lzt-replay-crash',
      LAZARUS_REPLAY_LEASE_MS: '1500', LAZARUS_REPLAY_POLL_MS: '100', LAZARUS_REPLAY_WINDOW: '100',
    }
    const worker = spawnWorker(env)
    // Frozen at a moment a copy the server has is still in flight in the database (its outcome not yet written): the
    // SIGKILL then lands between the publish and its record, the window a duplicate comes from.
    const inFlightPublished = await waitFor(async () => {
      if (worker.exitCode !== null) throw new Error(`worker exited on its own:\n${worker.output()}`)
      worker.kill('SIGSTOP')
      await nc.flush()
      const { rows } = await db.sql.query<{ replay_id: string }>(
        `SELECT i.replay_id FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id WHERE i.job_id = $1::bigint AND ${ITEM_STATUS_SQL} = 'in_flight'`,
        [created.id],
      )
      const hit = rows.filter((r) => published.has(r.replay_id))
      if (hit.length > 0) return hit
      worker.kill('SIGCONT')
      return null
    }, { timeoutMs: 60_000, intervalMs: 20, what: 'a published copy still in flight' })
    worker.kill('SIGKILL')
    await exited(worker)

    const finalWorker = spawnWorker(env)
    try {
      expect(await waitForJob(db.sql, created.id, ['completed', 'failed'], 120_000)).toMatchObject({ status: 'completed', confirmed: TOTAL, failed: 0, unroutable: 0 })
    } finally {
      finalWorker.kill('SIGTERM')
      await exited(finalWorker)
    }
    await nc.flush()
    watch.unsubscribe()
    const publishes = [...published.values()].reduce((sum, n) => sum + n, 0)
    const { duplicates } = await getReplay({ db, id: created.id })
    // Every copy was published once or more; each publish beyond the first was dropped by the server and counted.
    expect(published.size).toBe(TOTAL)
    expect(duplicates).toBe(publishes - TOTAL)
    expect(duplicates).toBeGreaterThanOrEqual(inFlightPublished.length)
    expect((await jsm.streams.info(stream.name)).state.messages).toBe(TOTAL)
    const copies = await readAll(stream.name, 'fixed')
    expect(copies).toHaveLength(TOTAL)
    expect(new Set(copies.map((c) => c.headers.get('Nats-Msg-Id')![0])).size).toBe(TOTAL)
  })

  it('halts a staged replay whose copies fail again, linking them to the job through the captured advisories', async () => {
    const stream = await newStream()
    const sourceId = await addSource(stream.name, 'worker')
    await storeFailures({ sourceId, stream: stream.name, subject: (i) => `${stream.subject}.order.${i}`, count: 12 })
    // The bug is not fixed: the consumer fails every copy, twice, and the server gives up on it.
    await jsm.consumers.add(stream.name, { durable_name: 'worker', ack_policy: AckPolicy.Explicit, max_deliver: 2, ack_wait: 30e9 })
    const messages = await (await jetstream(nc).consumers.get(stream.name, 'worker')).consume({ max_messages: 100 })
    const failing = (async () => {
      for await (const msg of messages) msg.nak()
    })()
    const capture = startJetStreamCapture({
      db, log: logger('jetstream-test'), maxBodyBytes: 1024 * 1024, reconcileMs: 200,
      settings: { ...NATS, LAZARUS_NATS_ADVISORY_STREAM: ADVISORY_STREAM, LAZARUS_NATS_CONSUMER: 'lzt-replay-capture', LAZARUS_NATS_ACK_WAIT_S: 1 },
    })
    const executor = startTestExecutor(db, { nats: NATS })
    try {
      await waitFor(async () => capture.status().plan !== null, { what: 'the capture plan' })
      const created = (await replay({
        input: { selection: { filter: { source: sourceId } }, confirmCount: 12, ratePerSecond: 200, staging: { canaryCount: 4, windowSeconds: 60, rampPercents: [100], haltPercent: 50, haltMinMessages: 2 } },
      })) as ReplayCreatedDto
      const halted = await waitForJob(db.sql, created.id, ['halted', 'completed', 'failed'], 60_000)
      expect(halted).toMatchObject({ status: 'halted', confirmed: 4 })
      const job = await getReplay({ db, id: created.id })
      expect(job.staging?.halt).toMatchObject({ stage: 0 })
      expect(job.staging?.halt?.evidence.refailed).toBeGreaterThanOrEqual(2)
      // The copies that failed again came back through the advisories, as new dead letters of the same source linked to
      // the job's items by their x-lazarus-replay-id.
      const { rows } = await db.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM dead_letters d JOIN replay_items i ON i.replay_id = d.lineage_replay_id WHERE i.job_id = $1::bigint AND d.source_id = $2::bigint`,
        [created.id, sourceId],
      )
      expect(rows[0].n).toBeGreaterThanOrEqual(2)
    } finally {
      await executor.stop()
      await capture.stop()
      await messages.close()
      await failing.catch(() => {})
    }
  })
})
