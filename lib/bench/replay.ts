/**
 * npm run bench:replay — stores N dead letters per round (1 KiB JSON bodies, Spring-style failure headers, two typed
 * x-death entries; written through the drainer's own storeBatch), then, in rounds, to the same durable queue through
 * the same exchange, with persistent messages and the same in-flight window:
 *   (a) raw amqplib confirmed publishing of the same bodies, properties and (plain) headers with a sliding window of
 *       unconfirmed publishes (the executor's discipline); in the first round also publish-a-window-then-
 *       waitForConfirms, for reference;
 *   (b) Lazarus' replay executor replaying that round's N (confirm channel, mandatory, return listener, claims written
 *       before publishing, outcomes, message statuses and counters written after the acks);
 * and one raw run after the last round. Raw and executor runs alternate because the machine's speed drifts within
 * minutes and the broker and the database are not in the same state after 100,000 messages as before them: each
 * round's ratio is against the better of the raw runs on either side of it, and the bench reports the median of the
 * rounds and their spread (one run on one machine swung from 60 % to 88 % when it compared a single executor run with
 * raw runs minutes apart). The executor's rate is over the job's run (started_at → finished_at); creating the job
 * (planning, freezing N items, marking N messages 'replaying') is timed separately. The stored rows are checkpointed
 * and vacuumed before anything is timed, so the database's background work after the bulk load does not slow the
 * first raw run.
 * Options: BENCH_MESSAGES (per round, default 50000), BENCH_ROUNDS (default 3), LAZARUS_REPLAY_WINDOW (default 1000),
 * REPLAY_PROF=<file> (a V8 CPU profile of this process while the executor runs the last round's job, for `node --cpu-prof`'s tools or Chrome DevTools),
 * BENCH_STAGED=1 (the job is a staged replay, docs/ARCHITECTURE.md#stages-and-halts: a canary of 1 %, ramps to 10, 50
 * and 100 %, observation windows of 0, so every stage's bound, re-failure checks and window bookkeeping run but no
 * stage waits; compare its ratio with a run without it: issue 18's budget is 5 %).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { Session } from 'node:inspector/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { connect, type ConfirmChannel } from '@/lib/server/platform/broker/amqplib'
import { typedTableToAmqplib, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { getConfig } from '@/lib/server/platform/config'
import { openDb } from '@/lib/server/platform/db'
import { createComposition } from '@/lib/server/platform/process/composition'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { createReplay } from '@/lib/server/replay/create-replay'
import { startReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { replayHeaders } from '@/lib/server/replay/publish-message'
import { replaySettings } from '@/lib/server/replay/replay-settings'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { AMQP_URL, coresAt, cpuSample, cpuUse, fmt, freshDatabase, machineCores, sleep } from './bench-support'
import { printVerdicts } from './verdict'

const total = Number(process.env.BENCH_MESSAGES ?? 50_000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error('BENCH_ROUNDS is a whole number of rounds, 1 or more')
const window = Number(process.env.LAZARUS_REPLAY_WINDOW ?? 1000)
const staged = process.env.BENCH_STAGED === '1'
/** BENCH_STAGED=1: stages that check and advance as they would in production, with windows that never hold the job. */
const STAGING = { canaryPercent: 1, windowSeconds: 0, rampPercents: [10, 50, 100] }
const suffix = randomBytes(3).toString('hex')
const exchange = `bench.replay.x.${suffix}`
const queue = `bench.replay.${suffix}`
const KEY = 'order.created'

const STACK = `com.acme.orders.StockException: SKU 48213 out of stock in warehouse WH-7
\tat com.acme.orders.inventory.StockService.reserve(StockService.java:118)
\tat com.acme.orders.OrderHandler.handle(OrderHandler.java:64)
\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler(MessagingMessageListenerAdapter.java:239)`

const S = (v: string) => ({ t: 'S', v }) as const

function headersOf(i: number, now: number): TypedTable {
  const death = (count: string, reason: string, q: string, time: number, x: string) => ({
    t: 'F' as const,
    v: { count: { t: 'l' as const, v: count }, exchange: S(x), queue: S(q), reason: S(reason), 'routing-keys': { t: 'A' as const, v: [S(KEY)] }, time: { t: 'T' as const, v: String(time) } },
  })
  return {
    'retry-count': { t: 'l', v: '3' },
    'x-death': { t: 'A', v: [death('3', 'rejected', 'orders.work', now, exchange), death('2', 'expired', 'orders.retry.30s', now - 30, 'orders.retry')] },
    'x-exception-message': S(`SKU ${48213 + (i % 50)} out of stock in warehouse WH-${i % 9}`),
    'x-exception-stacktrace': S(STACK),
    'x-first-death-exchange': S(exchange),
    'x-first-death-queue': S('orders.work'),
    'x-first-death-reason': S('rejected'),
    'x-original-exchange': S(exchange),
    'x-original-routingKey': S(KEY),
  }
}

function bodyOf(i: number): Buffer {
  const body = Buffer.alloc(1024, ' ')
  body.write(JSON.stringify({ orderId: `order-${i}`, customer: `c-${i % 977}`, lines: [{ sku: 48213 + (i % 50), qty: 1 + (i % 3) }], id: randomUUID() }))
  return body
}

const propertiesOf = (i: number) => ({ contentType: 'application/json', messageId: `msg-${i}-${suffix}`, correlationId: `order-${i}`, timestamp: 1764500000, appId: 'orders', deliveryMode: 2 })

function rowOf(i: number, now: number, round: number): IngestRow {
  const body = bodyOf(i)
  const failedAt = new Date(now * 1000 + i)
  const headers = headersOf(i, now)
  return {
    fingerprint: createHash('sha256').update(body).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8').trimEnd(),
    propertiesJson: JSON.stringify(propertiesOf(i)), headersJson: JSON.stringify(headers),
    deliveryExchange: '', deliveryRoutingKey: 'orders.dlq', deathReason: 'rejected', attempts: 3,
    originExchange: exchange, originRoutingKeys: [KEY], originQueue: queue,
    firstDeathAt: failedAt, lastDeathAt: failedAt, failedAt,
    errorType: 'com.acme.orders.StockException', errorMessage: `SKU ${48213 + (i % 50)} out of stock in warehouse WH-${i % 9}`, errorStack: STACK,
    failureKind: 'exhausted', service: 'orders', serviceVersion: '1.4.2', framework: 'spring-amqp', entityKey: `order-${i}`,
    signature: signatureOf(round), title: 'StockException: SKU <int> out of stock in warehouse <id>', messagePattern: 'SKU <int> out of stock in warehouse <id>',
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
  }
}

/** Each round replays a group of its own. */
const signatureOf = (round: number) => `v1:benchreplay${String(round + 1).padStart(4, '0')}`

/** What a replay sends, as plain amqplib headers: the same table minus broker headers, plus lineage of the same size. */
function rawMessages(now: number): { body: Buffer; options: object }[] {
  return Array.from({ length: total }, (_, i) => ({
    body: bodyOf(i),
    options: {
      ...propertiesOf(i),
      mandatory: true,
      headers: typedTableToAmqplib(replayHeaders({ id: String(i + 1), headers: headersOf(i, now), lineageOriginId: null, replayCount: 0 }, { kind: 'replay', replayId: randomUUID(), actor: 'bench' })),
    },
  }))
}

/** At most `window` unconfirmed publishes at any time (the executor's discipline). */
function rawSliding(channel: ConfirmChannel, messages: { body: Buffer; options: object }[]): Promise<number> {
  return new Promise((resolve, reject) => {
    let next = 0
    let unconfirmed = 0
    let confirmed = 0
    let waitingForDrain = false
    const start = performance.now()
    const pump = () => {
      while (!waitingForDrain && unconfirmed < window && next < messages.length) {
        const m = messages[next++]
        unconfirmed++
        const ok = channel.publish(exchange, KEY, m.body, m.options, (error) => {
          if (error) return reject(error)
          unconfirmed--
          if (++confirmed === messages.length) resolve(messages.length / ((performance.now() - start) / 1000))
          else pump()
        })
        if (!ok) {
          waitingForDrain = true
          channel.once('drain', () => {
            waitingForDrain = false
            pump()
          })
        }
      }
    }
    pump()
  })
}

/** Publish a window, wait for all of its confirms, repeat. */
async function rawWindowed(channel: ConfirmChannel, messages: { body: Buffer; options: object }[]): Promise<number> {
  const start = performance.now()
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (!channel.publish(exchange, KEY, m.body, m.options)) await new Promise((r) => channel.once('drain', r))
    if (i % window === window - 1) await channel.waitForConfirms()
  }
  await channel.waitForConfirms()
  return messages.length / ((performance.now() - start) / 1000)
}

/** A full GC, so each phase starts without the previous phase's garbage. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

type RoundResult = { replayRate: number; executorCpu: CpuUse; rawBefore: RawRun; rawAfter: RawRun }
type RawRun = { rate: number; cpu: CpuUse }
type CpuUse = ReturnType<typeof cpuUse>

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const percent = (share: number) => `${(share * 100).toFixed(1)} %`

async function main() {
  const connection = await connect(AMQP_URL)
  connection.on('error', () => {})
  const setup = await connection.createConfirmChannel()
  await setup.assertExchange(exchange, 'direct', { durable: true })
  await setup.assertQueue(queue, { durable: true })
  await setup.bindQueue(queue, exchange, KEY)
  const database = await freshDatabase('lazarus_bench_replay')
  const db = await openDb({ databaseUrl: database.url })
  try {
    const now = Math.floor(Date.now() / 1000)
    console.log(`storing ${fmt(total)} dead letters for each of ${rounds} rounds (1 KiB JSON, Spring-style failure headers, 2 typed x-death entries)…`)
    let started = performance.now()
    const { rows: source } = await db.sql.query<{ id: string }>(`INSERT INTO sources (queue, enabled) VALUES ($1, false) RETURNING id::text`, [`bench.dlq.${suffix}`])
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < total; i += 1000) {
        const rows = Array.from({ length: Math.min(1000, total - i) }, (_, j) => rowOf(i + j, now, round))
        await storeBatch({ sql: db.sql, sourceId: source[0].id, sourceLabel: `bench.dlq.${suffix}`, rows })
      }
    }
    console.log(`  stored in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    await db.sql.query('VACUUM ANALYZE')
    await db.sql.query('CHECKPOINT')

    const publisher = await connection.createConfirmChannel()
    publisher.on('return', () => console.error('raw publish returned (unroutable)'))
    // Built before each raw run and dropped after it: 100,000 prepared messages are 190 MB of live heap, which the
    // executor (a worker process with a small heap in production) would otherwise pay for in every full GC.
    const rawRun = async (label: string, publish: typeof rawSliding = rawSliding): Promise<RawRun> => {
      const messages = rawMessages(now)
      const cpu = cpuSample()
      const rate = await publish(publisher, messages)
      const used = cpuUse(cpu, total)
      console.log(`  ${label}: ${fmt(rate)} msg/s (${used.text})`)
      await setup.purgeQueue(queue)
      collectGarbage()
      return { rate, cpu: used }
    }

    const settings = replaySettings(getConfig(), { window, pollMs: 100, amqpUrl: AMQP_URL })
    const root = createComposition({ db })
    const results: RoundResult[] = []
    let rawBefore = await rawRun(`raw amqplib confirmed publish, sliding window of ${window}`)
    await rawRun(`raw amqplib confirmed publish, ${window} then waitForConfirms (reference)`, rawWindowed)
    for (let round = 0; round < rounds; round++) {
      console.log(`round ${round + 1} of ${rounds}`)
      const { rows: group } = await db.sql.query<{ id: string }>(`SELECT id::text FROM error_groups WHERE signature = $1`, [signatureOf(round)])
      let cpu = cpuSample()
      started = performance.now()
      // The process's root, as the web process or a worker would hand it to the replay route and the executor.
      const created = (await createReplay({ db, control: root.control, replayWork: root.replayWork, input: { selection: { groupId: group[0].id }, ratePerSecond: 50_000, confirmCount: total, ...(staged ? { staging: STAGING } : {}) }, actor: 'bench', settings })) as ReplayCreatedDto
      const createSeconds = (performance.now() - started) / 1000
      const stages = created.plan.staging?.stages.map((s) => fmt(s.throughSeq)).join(' → ')
      console.log(`  lazarus: ${staged ? `staged job (canary 1%, ramps 10/50/100%, windows 0; stages end at ${stages})` : 'job'} of ${fmt(created.plan.replayable)} created in ${createSeconds.toFixed(1)} s (plan, items, messages marked replaying; ${cpuUse(cpu, total).text})`)
      const profiler = process.env.REPLAY_PROF && round === rounds - 1 ? new Session() : null
      if (profiler) {
        profiler.connect()
        await profiler.post('Profiler.enable')
        await profiler.post('Profiler.start')
      }
      cpu = cpuSample()
      const executor = startReplayExecutor({ db, control: root.control, work: root.replayWork, settings, connectionName: 'lazarus-bench-replay' })
      let job: { status: string; confirmed: number; failed: number; unroutable: number; seconds: number | null } | undefined
      for (;;) {
        await sleep(200)
        const { rows } = await db.sql.query<NonNullable<typeof job>>(
          `SELECT status, confirmed, failed, unroutable, extract(epoch FROM finished_at - started_at)::float8 AS seconds FROM replay_jobs WHERE id = $1::bigint`,
          [created.id],
        )
        job = rows[0]
        if (['completed', 'failed', 'cancelled'].includes(job.status)) break
      }
      const executorCpu = cpuUse(cpu, total)
      if (profiler) {
        const { profile } = await profiler.post('Profiler.stop')
        await writeFile(process.env.REPLAY_PROF!, JSON.stringify(profile))
        profiler.disconnect()
      }
      await executor.stop()
      const { messageCount } = await setup.checkQueue(queue)
      if (job.status !== 'completed' || job.confirmed !== total || messageCount !== total) {
        throw new Error(`replay did not deliver everything: ${JSON.stringify(job)}, queue depth ${messageCount}`)
      }
      if (staged) {
        // Every stage ran (published, then advanced past its window of 0), none skipped.
        const { rows: [stage] } = await db.sql.query<{ stage: number; bounds: number; published: number }>(
          `SELECT stage, cardinality(stage_bounds) AS bounds, (SELECT count(*)::int FROM jsonb_array_elements(stage_log) e WHERE e ? 'publishedAt') AS published
           FROM replay_jobs WHERE id = $1::bigint`,
          [created.id],
        )
        if (stage.stage !== stage.bounds - 1 || stage.published !== stage.bounds) throw new Error(`staged job did not run every stage: ${JSON.stringify(stage)}`)
      }
      const replayRate = total / job.seconds!
      console.log(`  lazarus replay executor${staged ? ' (staged, windows 0)' : ''}: ${fmt(replayRate)} msg/s over the job's run (${job.seconds!.toFixed(1)} s; ${executorCpu.text})`)
      await setup.purgeQueue(queue)
      collectGarbage()
      const rawAfter = await rawRun(`raw amqplib confirmed publish, sliding window of ${window}`)
      results.push({ replayRate, executorCpu, rawBefore, rawAfter })
      rawBefore = rawAfter
    }
    await root.close()
    await publisher.close()

    // Each round against the raw runs beside it: the better rate, the cheaper messages.
    const rateRatios = results.map((r) => r.replayRate / Math.max(r.rawBefore.rate, r.rawAfter.rate))
    const cpuRatios = results.map((r) => r.executorCpu.machinePerItem / Math.min(r.rawBefore.cpu.machinePerItem, r.rawAfter.cpu.machinePerItem))
    const spread = (values: number[], show: (v: number) => string) => `${show(Math.min(...values))} – ${show(Math.max(...values))}`
    console.log(`\nratio executor/raw per round (the better raw run beside it): ${rateRatios.map(percent).join(', ')}; median ${percent(median(rateRatios))}, spread ${spread(rateRatios, percent)}`)
    console.log(`whole-machine CPU per message, executor/raw per round (the cheaper raw run beside it): ${cpuRatios.map((r) => `${r.toFixed(2)}×`).join(', ')}; median ${median(cpuRatios).toFixed(2)}×`)
    const bestRaw = Math.max(...results.flatMap((r) => [r.rawBefore.rate, r.rawAfter.rate]))
    const medianMachine = median(results.map((r) => r.executorCpu.machinePerItem))
    console.log(`at the best raw rate (${fmt(bestRaw)} msg/s), the executor's median CPU per message on the whole machine would keep ${coresAt(medianMachine, bestRaw)} busy; this machine has ${machineCores}`)
    // The targets of docs/performance.md, as medians of the rounds.
    printVerdicts([
      { name: `executor rate vs raw confirmed publish, median of ${rounds} rounds${staged ? ' (staged)' : ''}`, measured: median(rateRatios), bound: 'min', target: 0.9, unit: '%' },
      { name: `executor CPU per message vs raw confirmed publish (whole machine), median of ${rounds} rounds`, measured: median(cpuRatios), bound: 'max', target: 1.2, unit: '×' },
    ])
  } finally {
    await setup.deleteQueue(queue).catch(() => {})
    await setup.deleteExchange(exchange).catch(() => {})
    await connection.close().catch(() => {})
    await db.close().catch(() => {})
    await database.drop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
