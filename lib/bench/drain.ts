/**
 * npm run bench:drain — publishes N dead letters (1 KiB JSON bodies that do not compress, realistic failure headers and x-death)
 * twice, then measures in the same run:
 *   (a) raw amqplib consume-and-ack with the same prefetch and batch, no database;
 *   (b) a bare pipeline: consume, one prepared multi-row INSERT of (id, body) per batch, ack after commit —
 *       the ceiling any ack-after-commit drainer has on this machine before it does any work of its own;
 *   (c) Lazarus' drainer (a worker process) into PostgreSQL,
 * and prints the rates, the CPU per message of each, the worker's peak RSS, and a PASS or MISS line per target.
 * Options: BENCH_MESSAGES (default 100000), LAZARUS_DRAIN_BATCH, LAZARUS_DRAIN_PREFETCH,
 * BENCH_REPLAYED_SHARE (default 0; e.g. 0.2): that share of the dead letters are replayed copies that failed again,
 * stamped as the executor stamps them (x-lazarus-replay-id, x-lazarus-origin-id, x-lazarus-replay-count) with the
 * replay ids of a real replay job's items, stored in the bench database before anything is timed, so the drainer's
 * re-failure linking (the lineage column and its partial index, docs/ARCHITECTURE.md#stages-and-halts) does its
 * real work. Run once without and once with it to see what linking costs (issue 18's budget: 5 %).
 * BENCH_PREPARE_SQL: statements run on the migrated bench database before the drain is measured, to see what a part of
 * the schema costs the drain (docs/performance.md, "PostgreSQL's share"), e.g. `DROP INDEX dead_letters_service_idx`.
 * BENCH_BROKER: `rabbitmq` (the default, all of the above) or `jetstream`: the JetStream capture's cost per failed
 * message against a bare JetStream consume + read by sequence + INSERT, in the same way (lib/bench/drain-jetstream.ts,
 * which says what it does and which of these options it takes).
 */
import { createHash, randomBytes } from 'node:crypto'
import amqp from 'amqplib'
import pg from 'pg'
import { openDb } from '@/lib/server/platform/db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { AMQP_URL, coresAt, cpuSample, cpuUse, fmt, freshDatabase, machineCores } from './bench-support'
import { bareTable, BENCH_STACK, benchBody, startMeasuredWorker, stopWorker, storedRate, waitForStoredRows } from './drain-support'
import { printVerdicts } from './verdict'
import { springFailureHeaders } from './spring-dead-letter'
import { storagePerMessage } from './storage-per-message'

const total = Number(process.env.BENCH_MESSAGES ?? 100_000)
const replayedShare = Number(process.env.BENCH_REPLAYED_SHARE ?? 0)
if (!(replayedShare >= 0 && replayedShare <= 1)) throw new Error('BENCH_REPLAYED_SHARE is a share between 0 and 1 (e.g. 0.2)')
/** SQL run on the bench database once it is migrated, before the drainer is measured: what one part of the schema costs. */
const prepareSql = process.env.BENCH_PREPARE_SQL
const batch = Number(process.env.LAZARUS_DRAIN_BATCH ?? 500)
// Lazarus' own defaults (lib/server/platform/config.ts), used for the raw consumer too.
const prefetch = Number(process.env.LAZARUS_DRAIN_PREFETCH ?? 2000)
const suffix = randomBytes(3).toString('hex')

/** The lineage of the k-th replayed copy: a replay item's replay id and the dead letter it replayed. */
type Lineage = { replayId: string; originId: string }
let lineage: Lineage[] = []
/** Whether message i is a replayed copy: floor(total × share) of them, spread evenly. */
const isReplayed = (i: number) => Math.floor((i + 1) * replayedShare) > Math.floor(i * replayedShare)

function message(i: number) {
  const body = benchBody(i)
  const now = Math.floor(Date.now() / 1000)
  return {
    body,
    options: {
      contentType: 'application/json',
      messageId: `msg-${i}-${suffix}`,
      correlationId: `order-${i}`,
      timestamp: now,
      appId: 'orders',
      persistent: true,
      headers: {
        ...springFailureHeaders({ index: i, nowSeconds: now, stack: BENCH_STACK }),
        // (The originals, built before the job exists, carry no stamp.)
        ...(isReplayed(i) && lineage.length > 0 ? replayStamp(lineage[Math.floor(i * replayedShare)]) : {}),
      },
    },
  }
}

/** What the replay executor adds to a copy it publishes (lib/server/replay/publish-message.ts). */
const replayStamp = ({ replayId, originId }: Lineage) => ({
  'x-lazarus-origin-id': originId,
  'x-lazarus-replay-id': replayId,
  'x-lazarus-replay-count': { '!': 'long', value: 1 },
  'x-lazarus-replayed-by': 'bench',
})

/**
 * The replay the copies came from, in the bench database (migrated here, before the worker starts): `count` original
 * dead letters under their own source, and a completed staged job with one item each. Returns the items' lineage and
 * the largest original id (the drained rows come after it).
 */
async function seedReplay(databaseUrl: string, count: number): Promise<{ lineage: Lineage[]; lastOriginal: string }> {
  const db = await openDb({ databaseUrl })
  try {
    const { rows: source } = await db.sql.query<{ id: string }>(`INSERT INTO sources (queue, enabled) VALUES ($1, false) RETURNING id::text`, [`bench.originals.${suffix}`])
    const at = new Date()
    for (let i = 0; i < count; i += 1000) {
      const rows: IngestRow[] = Array.from({ length: Math.min(1000, count - i) }, (_, j) => {
        const m = message(i + j)
        const body = m.body
        return {
          fingerprint: createHash('sha256').update(body).digest(), redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8').trimEnd(),
          propertiesJson: JSON.stringify({ contentType: 'application/json', messageId: `orig-${i + j}-${suffix}` }), headersJson: '{}',
          deliveryExchange: '', deliveryRoutingKey: 'orders.dlq', deathReason: 'rejected', attempts: 3,
          originExchange: 'orders', originRoutingKeys: ['order.created'], originQueue: 'orders.work', firstDeathAt: at, lastDeathAt: at, failedAt: at,
          errorType: 'com.acme.orders.StockException', errorMessage: m.options.headers['x-exception-message'], errorStack: BENCH_STACK, failureKind: 'exhausted',
          service: 'orders', serviceVersion: null, framework: 'spring-amqp', entityKey: null, signature: 'v1:benchdrainorig1', title: 'StockException: SKU <int> out of stock',
          messagePattern: 'SKU <int> out of stock', flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
        }
      })
      await storeBatch({ sql: db.sql, sourceId: source[0].id, sourceLabel: `bench.originals.${suffix}`, rows })
    }
    const { rows: job } = await db.sql.query<{ id: string }>(
      `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, plan, created_by, total, stage_bounds, stage, window_ms, halt_share, halt_min, finished_at)
       VALUES ('replay', 'completed', '{}', '{"type":"queue"}', 1000, '{}', 'bench', $1, $2::int[], 0, 0, 0.1, 5, now()) RETURNING id::text`,
      [count, [count]],
    )
    const { rows } = await db.sql.query<{ replay_id: string; dead_letter_id: string }>(
      `INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id, status, published_at)
       SELECT $1::bigint, row_number() OVER (ORDER BY id)::int, id, 'replay', gen_random_uuid()::text, 'confirmed', now() FROM dead_letters
       RETURNING replay_id, dead_letter_id::text`,
      [job[0].id],
    )
    const { rows: last } = await db.sql.query<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM dead_letters')
    return { lineage: rows.map((r) => ({ replayId: r.replay_id, originId: r.dead_letter_id })), lastOriginal: last[0].id }
  } finally {
    await db.close()
  }
}

async function publish(channel: amqp.ConfirmChannel, queue: string) {
  const window = 2000
  for (let i = 0; i < total; i++) {
    const m = message(i)
    if (!channel.sendToQueue(queue, m.body, m.options)) await new Promise((r) => channel.once('drain', r))
    if (i % window === window - 1) await channel.waitForConfirms()
  }
  await channel.waitForConfirms()
}

async function rawConsume(connection: amqp.ChannelModel, queue: string): Promise<number> {
  const channel = await connection.createChannel()
  await channel.prefetch(prefetch)
  let received = 0
  let start = 0
  return new Promise((resolve) => {
    void channel.consume(queue, (msg) => {
      if (!msg) return
      if (received === 0) start = performance.now()
      received++
      if (received % batch === 0 || received === total) channel.ack(msg, true)
      if (received === total) {
        const seconds = (performance.now() - start) / 1000
        void channel.close().then(() => resolve(total / seconds))
      }
    })
  })
}

async function barePipeline(connection: amqp.ChannelModel, queue: string, databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const write = await bareTable(client, batch)
  const channel = await connection.createChannel()
  await channel.prefetch(prefetch)
  let pending: amqp.ConsumeMessage[] = []
  let received = 0
  let written = 0
  let start = 0
  let writing = Promise.resolve()
  return new Promise((resolve) => {
    void channel.consume(queue, (msg) => {
      if (!msg) return
      if (received++ === 0) start = performance.now()
      pending.push(msg)
      if (pending.length < batch && received < total) return
      const rows = pending
      pending = []
      writing = writing.then(async () => {
        await write(rows.map((m) => [m.properties.messageId, m.content] as const))
        channel.ack(rows[rows.length - 1], true)
        written += rows.length
        if (written === total) {
          const seconds = (performance.now() - start) / 1000
          await channel.close()
          await client.end()
          resolve(total / seconds)
        }
      })
    })
  })
}

async function main() {
  const connection = await amqp.connect(AMQP_URL)
  const setup = await connection.createConfirmChannel()
  const rawQueue = `bench.raw.${suffix}`
  const drainQueue = `bench.dlq.${suffix}`
  const bareQueue = `bench.bare.${suffix}`
  const readyQueue = `bench.ready.${suffix}`
  await setup.assertQueue(bareQueue, { durable: true })
  await setup.assertQueue(rawQueue, { durable: true })
  await setup.assertQueue(drainQueue, { durable: true })
  await setup.assertQueue(readyQueue, { durable: true })
  const db = await freshDatabase('lazarus_bench')
  try {
    const replayed = Math.floor(total * replayedShare)
    // The drained rows are those after the originals (none without BENCH_REPLAYED_SHARE).
    let lastOriginal = '0'
    if (replayed > 0) {
      console.log(`storing the ${fmt(replayed)} originals and a replay job of ${fmt(replayed)} items for the replayed copies…`)
      ;({ lineage, lastOriginal } = await seedReplay(db.url, replayed))
    }
    const mix = replayed > 0 ? `, ${fmt(replayed)} of them (${(replayedShare * 100).toFixed(1)}%) replayed copies that failed again` : ', none of them replayed copies'
    console.log(`publishing ${fmt(total)} dead letters three times (1 KiB JSON, Spring-style failure headers, 2 x-death entries${mix})…`)
    await publish(setup, rawQueue)
    await publish(setup, bareQueue)
    await publish(setup, drainQueue)

    const client = new pg.Client({ connectionString: db.url })
    await client.connect()
    let cpu = cpuSample()
    const rawRate = await rawConsume(connection, rawQueue)
    console.log(`raw amqplib consume+ack (prefetch ${prefetch}, ack multiple every ${batch}): ${fmt(rawRate)} msg/s (${cpuUse(cpu, total).text})`)

    cpu = cpuSample()
    const bareRate = await barePipeline(connection, bareQueue, db.url)
    const bareCpu = cpuUse(cpu, total)
    console.log(`bare consume + prepared INSERT (id, body) + ack after commit: ${fmt(bareRate)} msg/s (${(bareRate / rawRate * 100).toFixed(1)}% of raw; ${bareCpu.text})`)

    // The worker starts, migrates and connects before anything is counted: it drains an empty queue of its own while
    // the bench's source waits disabled, and the count starts when the source is enabled (the drainer's reconcile
    // picks it up within 100 ms). Start-up used to be counted per message. The worker is the built one (startWorker).
    const schema = await openDb({ databaseUrl: db.url })
    await schema.sql.query(`INSERT INTO sources (queue, enabled) VALUES ($1, false) ON CONFLICT DO NOTHING`, [drainQueue])
    // An experiment's change to the schema (an index dropped, the search backlog skipped), made before anything is counted.
    if (prepareSql) {
      console.log(`BENCH_PREPARE_SQL: ${prepareSql}`)
      await schema.sql.query(prepareSql)
    }
    await schema.close()
    const worker = await startMeasuredWorker(
      { DATABASE_URL: db.url, LAZARUS_SOURCES: readyQueue, LAZARUS_DRAIN_RECONCILE_MS: '100', LAZARUS_DRAIN_BATCH: String(batch), LAZARUS_DRAIN_PREFETCH: String(prefetch), AMQP_URL },
      async () => (await setup.checkQueue(readyQueue)).consumerCount > 0,
    )
    cpu = cpuSample(worker.pid)
    await client.query('UPDATE sources SET enabled = true WHERE queue = $1', [drainQueue])
    const peak = await waitForStoredRows({ client, worker, total, afterId: lastOriginal, what: 'drainer' })
    if (replayed > 0) {
      // The copies were linked: each stored with its replay id, found through the partial index as a halt check reads them.
      const { rows: linked } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM dead_letters d JOIN replay_items i ON i.replay_id = d.lineage_replay_id WHERE d.id > $1::bigint AND d.lineage_replay_id IS NOT NULL`,
        [lastOriginal],
      )
      if (linked[0].n !== replayed) throw new Error(`only ${linked[0].n} of ${replayed} replayed copies were linked to their replay items`)
    }
    const drainRate = await storedRate({ client, total, afterId: lastOriginal, batch })
    // The worker's own CPU (node), PostgreSQL's and the machine's, from enabling the source to the last row.
    const drainCpu = cpuUse(cpu, total)
    await client.end()
    await stopWorker(worker)
    const peakMB = Math.round(peak * 1.048576)
    console.log(`lazarus drainer into PostgreSQL${replayed > 0 ? ` (${(replayedShare * 100).toFixed(1)}% replayed copies, linked)` : ' (no replayed copies)'}: ${fmt(drainRate)} msg/s, peak RSS ${peak} MiB (${peakMB} MB); worker ${drainCpu.text}`)
    console.log(`rates: drainer/raw ${(drainRate / rawRate * 100).toFixed(1)}%, drainer/bare pipeline ${(drainRate / bareRate * 100).toFixed(1)}%`)
    console.log(
      `at the raw rate (${fmt(rawRate)} msg/s), with the whole machine's CPU per message measured above: the drainer would keep ` +
        `${coresAt(drainCpu.machinePerItem, rawRate)} busy, the bare pipeline ${coresAt(bareCpu.machinePerItem, rawRate)}; this machine has ${machineCores}`,
    )
    // Storage: what the database holds per message (minus the bare table this bench made beside it), against the
    // message's own bytes: its body, its header table as AMQP encodes it, and its properties.
    const storage = await storagePerMessage({ url: db.url })
    const storedParts = storage.parts.filter((p) => !/^bare\b/.test(p.name))
    const storedPerMessage = storedParts.reduce((sum, p) => sum + p.bytesPerMessage, 0)
    const own = storage.ownBytesPerMessage
    console.log(
      `storage: ${fmt(Math.round(storedPerMessage))} bytes per message in PostgreSQL for ${fmt(own)} of its own (body, header table and properties as AMQP sends them), over ${fmt(storage.messages)} messages:\n` +
        storedParts.map((p) => `  ${fmt(Math.round(p.bytesPerMessage)).padStart(6)} B  ${p.name}`).join('\n'),
    )
    // The targets of docs/performance.md: CPU per message against the bare pipeline's in the same run (rates swing
    // between machines; the cost of each message does much less), memory bounded by prefetch and batch, and storage.
    printVerdicts([
      { name: 'drainer CPU per message vs the bare pipeline (whole machine)', measured: drainCpu.machinePerItem / bareCpu.machinePerItem, bound: 'max', target: 1.5, unit: '×' },
      { name: 'drainer CPU per message vs the bare pipeline (Node)', measured: drainCpu.nodePerItem / bareCpu.nodePerItem, bound: 'max', target: 2, unit: '×' },
      { name: `drainer peak RSS (prefetch ${prefetch})`, measured: peak, bound: 'max', target: 200, unit: 'MiB' },
      { name: "storage per message beyond the message's own bytes", measured: storedPerMessage - own, bound: 'max', target: 1536, unit: 'B' },
    ])
  } finally {
    await setup.deleteQueue(rawQueue).catch(() => {})
    await setup.deleteQueue(bareQueue).catch(() => {})
    await setup.deleteQueue(drainQueue).catch(() => {})
    await setup.deleteQueue(readyQueue).catch(() => {})
    await connection.close().catch(() => {})
    await db.drop()
  }
}

const broker = process.env.BENCH_BROKER ?? 'rabbitmq'
const bench = {
  rabbitmq: main,
  jetstream: async () => {
    if (replayedShare > 0) throw new Error('BENCH_REPLAYED_SHARE measures the RabbitMQ drainer only')
    await (await import('./drain-jetstream')).benchJetStreamCapture()
  },
}[broker]
if (!bench) throw new Error(`BENCH_BROKER is rabbitmq (the default) or jetstream, not ${JSON.stringify(broker)}`)
bench().catch((error) => {
  console.error(error)
  process.exit(1)
})
