import { RetentionPolicy, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startJetStreamCapture, type JetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { advisorySubjects } from '@/lib/server/engines/jetstream-capture/advisory'
import { logger } from '@/lib/server/platform/log'
import { getConfig } from '@/lib/server/platform/config'
import { createSource } from '@/lib/server/sources/create-source'
import { createSourceSchema } from '@/lib/shared/schemas/source'
import * as sourcesRoute from '@/app/api/sources/route'
import * as replaysRoute from '@/app/api/replays/route'
import * as pausesRoute from '@/app/api/pauses/route'
import * as messagesRoute from '@/app/api/messages/route'
import { callRoute } from '../helpers/call-route'
import { waitFor } from '../helpers/broker'
import { createTestStream, NATS_URL, natsConnection, runFailingConsumer, uniqueNatsName, type TestStream } from '../helpers/nats'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { exited, spawnWorker } from '../helpers/worker-process'

/**
 * JetStream capture against the real nats-server (docs/jetstream.md#capture): consumers fail messages, the server
 * publishes advisories, Lazarus keeps them in a stream, reads each failed message back by sequence, stores it and acks
 * the advisory after the commit. The tests of this file run in order: the last one removes the advisory stream the
 * others share, to let a team's own stream capture advisories (the server allows one stream per subject).
 */
const ADVISORY_STREAM = uniqueNatsName('LZT_ADVISORIES')

describe('JetStream capture', () => {
  let db: TestDb
  let nc: NatsConnection
  let jsm: JetStreamManager
  const streams: TestStream[] = []
  const captures: JetStreamCapture[] = []

  const settings = (consumer: string) => ({
    LAZARUS_NATS_URL: [NATS_URL], LAZARUS_NATS_ADVISORY_STREAM: ADVISORY_STREAM, LAZARUS_NATS_CONSUMER: consumer, LAZARUS_NATS_ACK_WAIT_S: 1,
  })
  /** A capture in this process, started once its source exists and running until its consumer is in place. */
  const startCapture = async (consumer: string, advisoryStream: string, reconcileMs = 100) => {
    const capture = startJetStreamCapture({ db, settings: settings(consumer), log: logger('jetstream-test'), maxBodyBytes: 1024 * 1024, reconcileMs })
    captures.push(capture)
    await waitFor(async () => (await jsm.consumers.info(advisoryStream, consumer).catch(() => null)) !== null, { what: `capture consumer ${consumer} on ${advisoryStream}` })
    return capture
  }
  const addSource = async (stream: string, consumer: string | null) =>
    (await db.sql.query<{ id: string }>(
      `INSERT INTO sources (vhost, queue, kind, stream, consumer) VALUES ('', $1, 'jetstream', $2, $3) RETURNING id::text`,
      [`${stream}/${consumer ?? '*'}`, stream, consumer],
    )).rows[0].id
  const stored = async (sourceId: string) =>
    (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE source_id = $1::bigint', [sourceId])).rows[0].n

  beforeAll(async () => {
    db = await createTestDb()
    nc = await natsConnection()
    jsm = await jetstreamManager(nc)
  })

  // One capture at a time: captures with different consumer names on one database each store every failure
  // (docs/jetstream.md#running-several-processes).
  afterEach(async () => {
    for (const capture of captures.splice(0)) await capture.stop()
  })

  afterAll(async () => {
    for (const stream of streams) await stream.drop()
    await jsm?.streams.delete(ADVISORY_STREAM).catch(() => false)
    await nc?.close()
    await db?.drop()
  })

  it('are sources created through POST /api/sources once the server confirms the stream and consumer exist', async () => {
    const stream = await createTestStream(jsm, { prefix: 'LZT_API' })
    streams.push(stream)
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'worker', maxDeliver: 1, messages: [], fails: () => 'ack' })
    const config = { ...getConfig(), LAZARUS_NATS_URL: [NATS_URL] }
    const create = (body: unknown) => createSource({ db, actor: 'test', config, input: createSourceSchema.parse(body) })
    expect(await create({ kind: 'jetstream', stream: stream.name, consumer: 'worker' })).toMatchObject({ kind: 'jetstream', vhost: '', queue: `${stream.name}/worker`, stream: stream.name, consumer: 'worker', depth: null })
    const all = await create({ kind: 'jetstream', stream: stream.name })
    expect(all).toMatchObject({ queue: `${stream.name}/*`, consumer: null })
    // Pauses hold RabbitMQ messages: a JetStream source's is refused, saying why.
    const pause = await callRoute(pausesRoute, 'POST', new Request('http://lazarus.test/api/pauses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sourceId: all.id, queue: 'x', entityKey: 'k', reason: 'r' }) }))
    expect(pause.status).toBe(422)
    expect((await pause.json()).error.message).toContain('is a JetStream source')
    await expect(create({ kind: 'jetstream', stream: stream.name })).rejects.toMatchObject({ status: 409 })
    await expect(create({ kind: 'jetstream', stream: 'NO_SUCH_STREAM' })).rejects.toMatchObject({ status: 422, message: 'stream "NO_SUCH_STREAM" not found on the NATS server' })
    await expect(create({ kind: 'jetstream', stream: stream.name, consumer: 'nobody' })).rejects.toMatchObject({ status: 422, message: `consumer "nobody" of stream "${stream.name}" not found on the NATS server` })
    // Unreachable: a 503 that names the server, never the credentials its URL holds.
    const unreachable = await createSource({ db, actor: 'test', config: { ...config, LAZARUS_NATS_URL: ['nats://lazarus:s3cret-pass@127.0.0.1:1'] }, input: createSourceSchema.parse({ kind: 'jetstream', stream: 'X' }) }).catch((error: unknown) => error as { status: number; message: string })
    expect(unreachable).toMatchObject({ status: 503, message: expect.stringContaining('cannot reach NATS at 127.0.0.1:1') })
    expect((unreachable as { message: string }).message).not.toContain('s3cret')

    // Over HTTP: names a NATS subject could not be are refused, and without LAZARUS_NATS_URL the answer says so.
    const post = (body: unknown) => callRoute(sourcesRoute, 'POST', new Request('http://lazarus.test/api/sources', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    const bad = await post({ kind: 'jetstream', stream: 'ORDERS.v2' })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(await bad.json())).toContain('no spaces, dots')
    const unset = await post({ kind: 'jetstream', stream: 'NOT_YET_A_SOURCE' })
    expect(getConfig().LAZARUS_NATS_URL).toBeUndefined()
    expect(unset.status).toBe(422)
    expect((await unset.json()).error.message).toMatch(/LAZARUS_NATS_URL is not set/)
  })

  it('captures every message a consumer gives up on after max_deliver, byte for byte, with its headers and facts', async () => {
    const stream = await createTestStream(jsm, { prefix: 'LZT_ORDERS' })
    streams.push(stream)
    const sourceId = await addSource(stream.name, null)
    const capture = await startCapture('lzt-capture-1', ADVISORY_STREAM)
    const messages = Array.from({ length: 1_000 }, (_, i) => ({
      subject: `${stream.subject}.created`,
      data: new TextEncoder().encode(JSON.stringify({ n: i, kind: i % 10 < 3 ? 'bad' : 'good', sku: `sku-${i}` })),
      headers: [['X-Tenant', `t-${i % 7}`], ['X-Tenant', 'shared'], ['Nats-Error-Type', 'com.acme.OutOfStockException'], ['Nats-Error-Message', `sku-${i} is out of stock`]] as [string, string][],
    }))
    const { failed } = await runFailingConsumer(nc, { stream: stream.name, consumer: 'billing', maxDeliver: 3, messages, fails: (data) => (data.includes('"bad"') ? 'nak' : 'ack') })
    expect(failed).toBe(300)
    await waitFor(async () => (await stored(sourceId)) >= 300, { timeoutMs: 60_000, what: '300 captured failures' })

    const { rows } = await db.sql.query<{ body: Buffer; headers: unknown; properties: Record<string, unknown>; attempts: number; death_reason: string; error_type: string; failure_kind: string; origin_routing_keys: string[]; flags: string[] }>(
      `SELECT body, headers, properties, attempts, death_reason, error_type, failure_kind, origin_routing_keys, flags FROM dead_letters WHERE source_id = $1::bigint ORDER BY (properties->>'streamSeq')::int`,
      [sourceId],
    )
    expect(rows).toHaveLength(300)
    const byN = new Map(messages.map((m) => [JSON.parse(new TextDecoder().decode(m.data)).n as number, m]))
    for (const row of rows) {
      const n = JSON.parse(row.body.toString()).n as number
      expect(row.body.equals(Buffer.from(byN.get(n)!.data))).toBe(true)
      expect(row.properties).toMatchObject({ subject: `${stream.subject}.created`, stream: stream.name, streamSeq: n + 1, consumer: 'billing', deliveries: 3, advisory: 'max-deliveries' })
      expect(row.headers).toEqual({
        'X-Tenant': { t: 'A', v: [{ t: 'S', v: `t-${n % 7}` }, { t: 'S', v: 'shared' }] },
        'Nats-Error-Type': { t: 'S', v: 'com.acme.OutOfStockException' },
        'Nats-Error-Message': { t: 'S', v: `sku-${n} is out of stock` },
      })
      expect(row).toMatchObject({ attempts: 3, death_reason: 'max-deliveries', error_type: 'com.acme.OutOfStockException', origin_routing_keys: [`${stream.subject}.created`] })
      expect(row.flags).not.toContain('nats-header-block-kept')
    }
    const counts = (await db.sql.query<{ drained: number; grouped: number; distinct_seqs: number }>(
      `SELECT (SELECT drained_count::int FROM sources WHERE id = $1::bigint) AS drained, (SELECT sum(count)::int FROM error_groups) AS grouped,
         (SELECT count(DISTINCT properties->>'streamSeq')::int FROM dead_letters WHERE source_id = $1::bigint) AS distinct_seqs`,
      [sourceId],
    )).rows[0]
    expect(counts).toEqual({ drained: 300, grouped: 300, distinct_seqs: 300 })
    expect(capture.status().captured).toBe(300)
    expect(capture.status().plan?.bySource.get(stream.name)).toEqual({ advisoryStream: ADVISORY_STREAM, owned: true })
    // This process has no LAZARUS_NATS_URL (the capture was given its own): the replay plan says it has nothing to publish
    // these messages with (replays through JetStream: jetstream-replay.test.ts).
    const ids = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE source_id = $1::bigint ORDER BY id LIMIT 5', [sourceId])).rows.map((r) => r.id)
    const plan = await callRoute(replaysRoute, 'POST', new Request('http://lazarus.test/api/replays', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ selection: { ids }, dryRun: true }) }))
    expect(plan.status).toBe(200)
    expect(await plan.json()).toMatchObject({ plan: { replayable: 0, canRun: false, excluded: [{ reason: 'jetstream', count: 5 }] } })
    // The JetStream facts filter like properties: p.subject, p.stream, p.consumer.
    const listed = async (query: string) =>
      ((await (await callRoute(messagesRoute, 'GET', new Request(`http://lazarus.test/api/messages?source=${sourceId}&limit=500&${query}`))).json()).messages as unknown[]).length
    expect(await listed(`p.subject=${stream.subject}.created`)).toBe(300)
    expect(await listed(`p.stream=${stream.name}&p.consumer=billing`)).toBe(300)
    expect(await listed(`p.subject^=${stream.subject}.`)).toBe(300)
    // And as filters of their own: a stream by its sources, a subject exactly or by NATS wildcards.
    expect(await listed(`stream=${stream.name}`)).toBe(300)
    expect(await listed('stream=NO_SUCH_STREAM')).toBe(0)
    expect(await listed(`subject=${stream.subject}.created`)).toBe(300)
    expect(await listed(`subject=${stream.subject}.*`)).toBe(300)
    expect(await listed(`subject=${stream.subject}.>`)).toBe(300)
    expect(await listed(`subject=${stream.subject}.created.*`)).toBe(0)
    expect(await listed(`subject=*.created`)).toBe(300)
    expect(await listed('p.consumer=somebody-else')).toBe(0)
    // Every advisory was acknowledged once stored.
    await waitFor(async () => (await jsm.consumers.info(ADVISORY_STREAM, 'lzt-capture-1')).num_ack_pending === 0, { what: 'advisories acknowledged' })
  })

  it('stores a terminated message, and a record flagged message-gone when a work queue already removed it', async () => {
    const limits = await createTestStream(jsm, { prefix: 'LZT_LIMITS' })
    const workQueue = await createTestStream(jsm, { prefix: 'LZT_WORK', retention: RetentionPolicy.Workqueue })
    streams.push(limits, workQueue)
    const limitsSource = await addSource(limits.name, 'worker')
    const workSource = await addSource(workQueue.name, null)
    await startCapture('lzt-capture-2', ADVISORY_STREAM)
    const one = (s: TestStream, text: string) => [{ subject: `${s.subject}.x`, data: new TextEncoder().encode(text) }]
    await runFailingConsumer(nc, { stream: limits.name, consumer: 'worker', maxDeliver: 5, messages: one(limits, '{"poison":true}'), fails: () => 'term' })
    await runFailingConsumer(nc, { stream: workQueue.name, consumer: 'worker', maxDeliver: 5, messages: one(workQueue, '{"poison":"gone"}'), fails: () => 'term' })
    await waitFor(async () => (await stored(limitsSource)) === 1 && (await stored(workSource)) === 1, { what: 'both terminated messages captured' })

    const read = async (sourceId: string) => (await db.sql.query<{ body: Buffer; flags: string[]; death_reason: string; failure_kind: string; title: string; attempts: number }>(
      'SELECT d.body, d.flags, d.death_reason, d.failure_kind, g.title, d.attempts FROM dead_letters d JOIN error_groups g ON g.id = d.group_id WHERE d.source_id = $1::bigint', [sourceId],
    )).rows[0]
    const kept = await read(limitsSource)
    expect(kept.body.toString()).toBe('{"poison":true}')
    expect(kept).toMatchObject({ death_reason: 'terminated', failure_kind: 'exhausted', attempts: 1, title: `no error metadata: terminated in ${limits.name}/worker` })
    expect(kept.flags).not.toContain('message-gone')
    const gone = await read(workSource)
    expect(gone.body.length).toBe(0)
    expect(gone.flags).toContain('message-gone')
    expect(gone.death_reason).toBe('terminated')
  })

  it('says on the source why it cannot capture when NATS cannot be reached, and clears it once it can', async () => {
    const stream = await createTestStream(jsm, { prefix: 'LZT_DOWN' })
    streams.push(stream)
    const sourceId = await addSource(stream.name, null)
    const lastError = async () => (await db.sql.query<{ last_error: string | null }>('SELECT last_error FROM sources WHERE id = $1::bigint', [sourceId])).rows[0].last_error
    const unreachable = startJetStreamCapture({ db, settings: { ...settings('lzt-capture-down'), LAZARUS_NATS_URL: ['nats://127.0.0.1:1'] }, log: logger('jetstream-test'), maxBodyBytes: 1024, reconcileMs: 100 })
    captures.push(unreachable)
    expect(await waitFor(lastError, { what: 'the source\'s error' })).toMatch(/^cannot capture from NATS: /)
    await unreachable.stop()
    await startCapture('lzt-capture-down', ADVISORY_STREAM)
    await waitFor(async () => (await lastError()) === null, { what: 'the error cleared' })
    await db.sql.query('UPDATE sources SET enabled = false WHERE id = $1::bigint', [sourceId])
  })

  it('captures the first failure of a source added while it runs, long before it would read the sources again', async () => {
    const first = await createTestStream(jsm, { prefix: 'LZT_EARLY' })
    const later = await createTestStream(jsm, { prefix: 'LZT_LATER' })
    streams.push(first, later)
    await addSource(first.name, null)
    // The sources are read again every hour: only the advisory of an unknown stream makes it look at once.
    await startCapture('lzt-capture-late', ADVISORY_STREAM, 3_600_000)
    const laterSource = await addSource(later.name, null)
    await runFailingConsumer(nc, { stream: later.name, consumer: 'worker', maxDeliver: 1, messages: [{ subject: `${later.subject}.x`, data: new TextEncoder().encode('{"later":1}') }], fails: () => 'nak' })
    await waitFor(async () => (await stored(laterSource)) === 1, { what: 'the new source\'s first failure' })
  })

  it('stores every failure exactly once across repeated SIGKILLs of the worker', async () => {
    const stream = await createTestStream(jsm, { prefix: 'LZT_CRASH' })
    streams.push(stream)
    const sourceId = await addSource(stream.name, 'crashy')
    const env = {
      DATABASE_URL: db.url, LAZARUS_NATS_URL: NATS_URL, LAZARUS_NATS_ADVISORY_STREAM: ADVISORY_STREAM, LAZARUS_NATS_CONSUMER: 'lzt-capture-crash',
      LAZARUS_NATS_ACK_WAIT_S: '1', LAZARUS_DRAIN_RECONCILE_MS: '200',
    }
    // A first worker puts the capture consumer in place (it reads advisories from then on), then is killed.
    const first = spawnWorker(env)
    await waitFor(async () => (await jsm.consumers.info(ADVISORY_STREAM, 'lzt-capture-crash').catch(() => null)) !== null || first.exitCode !== null, { timeoutMs: 60_000, what: 'the worker\'s capture consumer' })
    if (first.exitCode !== null) throw new Error(`worker exited on its own:\n${first.output()}`)
    first.kill('SIGKILL')
    await exited(first)

    const TOTAL = 3_000
    const messages = Array.from({ length: TOTAL }, (_, i) => ({ subject: `${stream.subject}.paid`, data: new TextEncoder().encode(`{"n":${i}}`) }))
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'crashy', maxDeliver: 1, messages, fails: () => 'nak' })

    const STEP = TOTAL / 12
    let kills = 0
    let killedWithProgress = 0
    while (kills < 5) {
      const before = await stored(sourceId)
      const worker = spawnWorker(env)
      const target = before + STEP + Math.floor(Math.random() * STEP)
      const reached = await waitFor(async () => (await stored(sourceId)) >= Math.min(target, TOTAL) || worker.exitCode !== null, { timeoutMs: 60_000, intervalMs: 10, what: `progress past ${target}` }).catch(() => false)
      if (worker.exitCode !== null) throw new Error(`worker exited on its own:\n${worker.output()}`)
      worker.kill('SIGKILL')
      await exited(worker)
      kills++
      if (reached && (await stored(sourceId)) < TOTAL) killedWithProgress++
      if ((await stored(sourceId)) >= TOTAL) break
    }
    expect(killedWithProgress).toBeGreaterThanOrEqual(2)

    const last = spawnWorker(env)
    try {
      await waitFor(async () => (await stored(sourceId)) >= TOTAL && (await jsm.consumers.info(ADVISORY_STREAM, 'lzt-capture-crash')).num_ack_pending === 0 && (await jsm.consumers.info(ADVISORY_STREAM, 'lzt-capture-crash')).num_pending === 0, { timeoutMs: 120_000, what: 'every failure captured and acknowledged' })
    } finally {
      last.kill('SIGTERM')
      await exited(last)
    }
    const { rows } = await db.sql.query<{ total: number; distinct_seqs: number; max_seen: number; drained: number }>(
      `SELECT count(*)::int AS total, count(DISTINCT properties->>'streamSeq')::int AS distinct_seqs, max(seen_count)::int AS max_seen,
         (SELECT drained_count::int FROM sources WHERE id = $1::bigint) AS drained
       FROM dead_letters WHERE source_id = $1::bigint`,
      [sourceId],
    )
    expect(rows[0]).toEqual({ total: TOTAL, distinct_seqs: TOTAL, max_seen: 1, drained: TOTAL })
  })

  it('reads a team\'s own advisory stream with a consumer of its own, and never changes or deletes that stream', async () => {
    // The team's stream can only exist once no other stream captures the same advisories: remove the stream the
    // earlier tests shared, and their sources, which would make Lazarus keep their advisories in it again.
    await jsm.streams.delete(ADVISORY_STREAM)
    await db.sql.query(`UPDATE sources SET enabled = false WHERE kind = 'jetstream'`)
    const stream = await createTestStream(jsm, { prefix: 'LZT_TEAM' })
    streams.push(stream)
    const teamStream = uniqueNatsName('LZT_TEAM_FAILURES')
    await jsm.streams.add({ name: teamStream, subjects: advisorySubjects(stream.name), description: 'the team\'s own failure stream', max_age: 3600e9 })
    streams.push({ name: teamStream, subject: '', drop: async () => void (await jsm.streams.delete(teamStream).catch(() => false)) })
    const before = (await jsm.streams.info(teamStream)).config
    const sourceId = await addSource(stream.name, null)

    const capture = await startCapture('lzt-capture-team', teamStream)
    await runFailingConsumer(nc, { stream: stream.name, consumer: 'worker', maxDeliver: 2, messages: [{ subject: `${stream.subject}.a`, data: new TextEncoder().encode('{"team":1}') }], fails: () => 'nak' })
    await waitFor(async () => (await stored(sourceId)) === 1, { what: 'the failure captured from the team\'s stream' })
    expect(capture.status().plan?.bySource.get(stream.name)).toEqual({ advisoryStream: teamStream, owned: false })
    // Lazarus made no stream of its own: every advisory it needs is kept by the team's.
    expect(await jsm.streams.info(ADVISORY_STREAM).catch(() => null)).toBeNull()
    await capture.stop()
    const after = await jsm.streams.info(teamStream)
    expect(after.config).toEqual(before)
    // The team's stream still holds its advisory: Lazarus' acks move its own consumer only.
    expect(after.state.messages).toBe(1)
  })
})
