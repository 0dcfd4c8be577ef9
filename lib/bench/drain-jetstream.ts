/**
 * BENCH_BROKER=jetstream npm run bench:drain — what Lazarus' JetStream capture (docs/jetstream.md#capture) costs per
 * failed message, against the bare pipeline any capture of JetStream failures has to run (docs/performance.md,
 * "JetStream capture"). With the capture not yet reading, a consumer with max_deliver 3 naks N messages (1 KiB JSON,
 * NATS error headers) of a stream of the bench's own until the server gives up on each; the N max-deliveries
 * advisories pile up in the stream that keeps them. Then, in the same run:
 *   (a) a bare pipeline: a pull consume of the same advisories, each failed message read back by stream sequence, one
 *       prepared multi-row INSERT of (id, body) per batch of the capture's size, ack after commit;
 *   (b) Lazarus' capture (the built worker) into PostgreSQL, counted from the moment its source is enabled,
 * and prints the rates, the CPU per message of each (nats-server's among them), the worker's peak RSS, and a PASS or
 * MISS line per target. Needs nats-server with JetStream (LAZARUS_NATS_URL, default nats://127.0.0.1:4222, with
 * LAZARUS_NATS_USER etc. as Lazarus reads them), PostgreSQL and RabbitMQ (the worker's control connection).
 * Options: BENCH_MESSAGES (default 100000): failures to capture; BENCH_PREPARE_SQL, as for RabbitMQ.
 * Streams are named LZB_…; the bench deletes them, its consumers and its database at the end.
 */
import { randomBytes } from 'node:crypto'
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type JsMsg } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import amqp from 'amqplib'
import pg from 'pg'
import { openDb } from '@/lib/server/platform/db'
import { getConfig } from '@/lib/server/platform/config'
import { connectNats, type NatsSettings } from '@/lib/server/platform/broker/nats'
import { advisorySubjects, OWN_STREAM_DESCRIPTION } from '@/lib/server/sources/advisory-keepers'
import { ensureCapturePlan, type CaptureRoute } from '@/lib/server/engines/jetstream-capture/capture-plan'
import { createTestStream, runFailingConsumer, type FailingMessage } from '@/tests/helpers/nats'
import { AMQP_URL, coresAt, cpuSample, cpuUse, fmt, freshDatabase, machineCores, sleep } from './bench-support'
import { bareTable, benchBody, benchErrorMessage, startMeasuredWorker, stopWorker, storedRate, waitForStoredRows } from './drain-support'
import { printVerdicts } from './verdict'

const total = Number(process.env.BENCH_MESSAGES ?? 100_000)
const prepareSql = process.env.BENCH_PREPARE_SQL
const suffix = randomBytes(3).toString('hex').toUpperCase()
/** startJetStreamCapture's batch: advisories per fetch and per transaction. The bare pipeline writes as many at once. */
const CAPTURE_BATCH = 256
/** The capture consumer's bound on unacknowledged advisories (capture-plan.ts), given to the bare one too. */
const MAX_ACK_PENDING = 2_000
const ACK_WAIT_S = 30
const MAX_DELIVER = 3
/** The failures are made this many messages at a time, so the bench never holds all their bodies at once. */
const ROUND = 5_000

/** The i-th failed message: its body, and the headers a NATS service sets for a failure (docs/jetstream.md#what-a-failure-says). */
function failingMessage(subject: string, i: number): FailingMessage {
  return {
    subject,
    data: benchBody(i),
    headers: [
      ['Nats-Msg-Id', `msg-${i}-${suffix}`],
      ['Nats-Error-Type', 'com.acme.orders.StockException'],
      ['Nats-Error-Message', benchErrorMessage(i)],
      ['Nats-Service', 'orders'],
      ['Nats-Service-Version', '1.4.2'],
      ['X-Tenant', `t-${i % 7}`],
      ['X-Tenant', 'shared'],
    ],
  }
}

/** Fails `total` messages after max_deliver deliveries each, ROUND at a time; the server publishes an advisory for each. */
async function produceFailures(nc: NatsConnection, stream: { name: string; subject: string }): Promise<void> {
  let failed = 0
  for (let start = 0; start < total; start += ROUND) {
    const messages = Array.from({ length: Math.min(ROUND, total - start) }, (_, k) => failingMessage(`${stream.subject}.created`, start + k))
    failed += (await runFailingConsumer(nc, { stream: stream.name, consumer: 'orders-worker', maxDeliver: MAX_DELIVER, messages, fails: () => 'nak' })).failed
  }
  if (failed !== total) throw new Error(`the failing consumer gave up on ${failed} messages, not ${total}`)
}

/**
 * Where the stream's advisories are kept, and the capture consumer on it, made by the capture's own planning
 * (ensureCapturePlan) before any failure. The bench's own advisory stream keeps this stream's advisories alone, not
 * every stream's, so that it does not stand in the way of a test or a Lazarus on the same server; where such a stream
 * already keeps every stream's advisories, the capture reads them there, as it reads a team's stream.
 */
async function keepAdvisories(jsm: JetStreamManager, options: { stream: string; ownStream: string; consumer: string }): Promise<CaptureRoute> {
  const { stream, ownStream, consumer } = options
  try {
    await jsm.streams.add({ name: ownStream, subjects: advisorySubjects(stream), description: OWN_STREAM_DESCRIPTION, retention: RetentionPolicy.Limits, storage: StorageType.File })
  } catch (error) {
    // Subjects overlap: another stream keeps them.
    if (!(error instanceof JetStreamApiError && error.code === 10065)) throw error
  }
  const plan = await ensureCapturePlan({ jsm, ownStream, consumer: { name: consumer, ackWaitSeconds: ACK_WAIT_S }, sourceStreams: [stream] })
  const route = plan.bySource.get(stream)
  if (!route || 'problem' in route) throw new Error(`the capture cannot keep the advisories of ${stream}: ${route && 'problem' in route ? route.problem : 'no plan'}`)
  return route
}

/** Waits until each consumer has `total` advisories waiting: the server publishes them after the last delivery. */
async function waitForAdvisories(jsm: JetStreamManager, route: CaptureRoute, consumers: readonly string[]): Promise<void> {
  let waiting = 0
  let progressAt = performance.now()
  for (;;) {
    const counts = await Promise.all(consumers.map(async (c) => (await jsm.consumers.info(route.advisoryStream, c)).num_pending))
    if (Math.min(...counts) >= total) return
    if (Math.min(...counts) > waiting) progressAt = performance.now()
    waiting = Math.min(...counts)
    if (performance.now() - progressAt > 30_000) throw new Error(`only ${waiting} of ${total} advisories arrived in ${route.advisoryStream}`)
    await sleep(100)
  }
}

/**
 * The bare pipeline: pull-consume the advisories, read each failed message back by stream sequence (as the capture
 * does, `STREAM.MSG.GET`), one INSERT of (id, body) per batch, ack each advisory after the commit. No Lazarus code.
 */
async function bareJetStreamPipeline(options: { nc: NatsConnection; jsm: JetStreamManager; advisoryStream: string; consumer: string; databaseUrl: string }): Promise<number> {
  const { nc, jsm } = options
  const client = new pg.Client({ connectionString: options.databaseUrl })
  await client.connect()
  const write = await bareTable(client, CAPTURE_BATCH)
  const messages = await (await jetstream(nc).consumers.get(options.advisoryStream, options.consumer)).consume({ max_messages: CAPTURE_BATCH * 2 })
  let pending: JsMsg[] = []
  let received = 0
  let start = 0
  for await (const msg of messages) {
    if (received++ === 0) start = performance.now()
    pending.push(msg)
    if (pending.length < CAPTURE_BATCH && received < total) continue
    const advisories = pending.map((m) => m.json<{ stream: string; stream_seq: number }>())
    const originals = await Promise.all(advisories.map((a) => jsm.streams.getMessage(a.stream, { seq: a.stream_seq })))
    await write(originals.map((original, i) => {
      if (!original) throw new Error(`message ${advisories[i].stream_seq} of ${advisories[i].stream} is gone`)
      return [`${advisories[i].stream}:${advisories[i].stream_seq}`, Buffer.from(original.data.buffer, original.data.byteOffset, original.data.byteLength)] as const
    }))
    for (const m of pending) m.ack()
    pending = []
    if (received === total) break
  }
  const seconds = (performance.now() - start) / 1000
  await messages.close()
  await nc.flush()
  await client.end()
  return total / seconds
}

export async function benchJetStreamCapture(): Promise<void> {
  const config = getConfig()
  const settings: NatsSettings = { ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL ?? ['nats://127.0.0.1:4222'] }
  const nc = await connectNats(settings, 'lazarus-bench')
  const jsm = await jetstreamManager(nc)
  const amqpConnection = await amqp.connect(AMQP_URL)
  const setup = await amqpConnection.createChannel()
  // The worker's drainer consumes this empty queue once it is up: how the bench knows it started.
  const readyQueue = `bench.ready.${suffix.toLowerCase()}`
  await setup.assertQueue(readyQueue, { durable: true })
  const stream = await createTestStream(jsm, { prefix: 'LZB_ORDERS' })
  const ownStream = `LZB_ADVISORIES_${suffix}`
  const captureConsumer = `lzb-capture-${suffix}`
  const bareConsumer = `lzb-bare-${suffix}`
  let route: CaptureRoute | null = null
  const db = await freshDatabase('lazarus_bench')
  let worker: Awaited<ReturnType<typeof startMeasuredWorker>> | null = null
  try {
    route = await keepAdvisories(jsm, { stream: stream.name, ownStream, consumer: captureConsumer })
    // The bare pipeline's consumer, as the capture's is: from now on, explicit acks, as many unacknowledged at most.
    await jsm.consumers.add(route.advisoryStream, {
      durable_name: bareConsumer, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, ack_wait: ACK_WAIT_S * 1e9, max_ack_pending: MAX_ACK_PENDING,
      // In a stream the bench did not make, only this stream's advisories.
      ...(!route.owned && { filter_subject: advisorySubjects(stream.name)[0] }),
    })
    const kept = route.owned ? `${route.advisoryStream} (the bench's own, on ${stream.name}'s advisory subjects)` : `${route.advisoryStream}, a stream the bench did not make (it removes only its consumers there)`
    console.log(`failing ${fmt(total)} messages of ${stream.name} (1 KiB JSON, NATS error headers) after max_deliver ${MAX_DELIVER}, with the capture stopped…`)
    const producing = performance.now()
    await produceFailures(nc, stream)
    await waitForAdvisories(jsm, route, [captureConsumer, bareConsumer])
    console.log(`${fmt(total)} max-deliveries advisories waiting in ${kept}, after ${((performance.now() - producing) / 1000).toFixed(1)} s`)

    let cpu = cpuSample()
    const bareRate = await bareJetStreamPipeline({ nc, jsm, advisoryStream: route.advisoryStream, consumer: bareConsumer, databaseUrl: db.url })
    const bareCpu = cpuUse(cpu, total, 'nats')
    console.log(`bare JetStream pull consume + read by sequence + prepared INSERT (id, body) per ${CAPTURE_BATCH} + ack after commit: ${fmt(bareRate)} msg/s (${bareCpu.text})`)

    // As for RabbitMQ: the worker starts, migrates and connects before anything is counted, while the bench's source
    // waits disabled; the count starts when it is enabled (the capture reads its sources every 100 ms here).
    const schema = await openDb({ databaseUrl: db.url })
    await schema.sql.query(`INSERT INTO sources (vhost, queue, kind, stream, consumer, enabled) VALUES ('', $1, 'jetstream', $2, NULL, false)`, [`${stream.name}/*`, stream.name])
    if (prepareSql) {
      console.log(`BENCH_PREPARE_SQL: ${prepareSql}`)
      await schema.sql.query(prepareSql)
    }
    await schema.close()
    worker = await startMeasuredWorker(
      {
        DATABASE_URL: db.url, LAZARUS_SOURCES: readyQueue, LAZARUS_DRAIN_RECONCILE_MS: '100', AMQP_URL,
        LAZARUS_NATS_URL: settings.LAZARUS_NATS_URL!.join(','), LAZARUS_NATS_ADVISORY_STREAM: ownStream, LAZARUS_NATS_CONSUMER: captureConsumer, LAZARUS_NATS_ACK_WAIT_S: String(ACK_WAIT_S),
      },
      async () => (await setup.checkQueue(readyQueue)).consumerCount > 0,
    )
    const client = new pg.Client({ connectionString: db.url })
    await client.connect()
    cpu = cpuSample(worker.pid)
    await client.query(`UPDATE sources SET enabled = true WHERE kind = 'jetstream' AND stream = $1`, [stream.name])
    const peak = await waitForStoredRows({ client, worker, total, afterId: '0', what: 'capture' })
    const captureRate = await storedRate({ client, total, afterId: '0', batch: CAPTURE_BATCH })
    // The worker's own CPU (node), PostgreSQL's, nats-server's and the machine's, from enabling the source to the last row.
    const captureCpu = cpuUse(cpu, total, 'nats')
    const { rows: [check] } = await client.query<{ gone: number; typed: number }>(
      `SELECT count(*) FILTER (WHERE 'message-gone' = ANY(flags))::int AS gone, count(*) FILTER (WHERE error_type = 'com.acme.orders.StockException')::int AS typed FROM dead_letters`,
    )
    if (check.gone > 0 || check.typed !== total) throw new Error(`the capture stored ${check.gone} messages as gone and read the error type of ${check.typed} of ${total}`)
    await client.end()
    await stopWorker(worker)
    const peakMB = Math.round(peak * 1.048576)
    console.log(`lazarus JetStream capture into PostgreSQL: ${fmt(captureRate)} msg/s, peak RSS ${peak} MiB (${peakMB} MB); worker ${captureCpu.text}`)
    console.log(`rates: capture/bare pipeline ${(captureRate / bareRate * 100).toFixed(1)}%`)
    console.log(
      `at the bare pipeline's rate (${fmt(bareRate)} msg/s), with the whole machine's CPU per message measured above: the capture would keep ` +
        `${coresAt(captureCpu.machinePerItem, bareRate)} busy, the bare pipeline ${coresAt(bareCpu.machinePerItem, bareRate)}; this machine has ${machineCores}`,
    )
    // The drain's targets (docs/performance.md), against the bare JetStream pipeline measured in the same run.
    printVerdicts([
      { name: 'JetStream capture CPU per message vs the bare JetStream pipeline (whole machine)', measured: captureCpu.machinePerItem / bareCpu.machinePerItem, bound: 'max', target: 1.5, unit: '×' },
      { name: 'JetStream capture CPU per message vs the bare JetStream pipeline (Node)', measured: captureCpu.nodePerItem / bareCpu.nodePerItem, bound: 'max', target: 2, unit: '×' },
      { name: 'JetStream capture worker peak RSS', measured: peak, bound: 'max', target: 200, unit: 'MiB' },
    ])
  } finally {
    if (worker) await stopWorker(worker)
    // In a stream the bench did not make, only its consumers; its own stream (named for this run) goes with them.
    if (route && !route.owned) for (const consumer of [captureConsumer, bareConsumer]) await jsm.consumers.delete(route.advisoryStream, consumer).catch(() => false)
    await jsm.streams.delete(ownStream).catch(() => false)
    await stream.drop()
    await setup.deleteQueue(readyQueue).catch(() => {})
    await amqpConnection.close().catch(() => {})
    await nc.close()
    await db.drop()
  }
}
