/**
 * What bench:drain's two modes share (lib/bench/drain.ts for RabbitMQ, lib/bench/drain-jetstream.ts for JetStream): the
 * failed message's body, the bare pipeline's table, and the worker whose work is measured from the moment its source
 * is enabled to the last stored row.
 */
import type { ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import type pg from 'pg'
import { peakRssMiB, rssMiB, sleep, startWorker } from './bench-support'

const BODY_BYTES = 1024

/** The failure both modes report, as a Java service's stack trace. */
export const BENCH_STACK = `com.acme.orders.StockException: SKU 48213 out of stock in warehouse WH-7
\tat com.acme.orders.inventory.StockService.reserve(StockService.java:118)
\tat com.acme.orders.OrderHandler.handle(OrderHandler.java:64)
\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler(MessagingMessageListenerAdapter.java:239)`

/** The error message of the i-th failed message (its SKU and warehouse vary, its pattern does not). */
export const benchErrorMessage = (i: number) => `SKU ${48213 + (i % 50)} out of stock in warehouse WH-${i % 9}`

/**
 * The i-th failed message's body: 1 KiB of JSON whose last field is random base64, so PostgreSQL cannot compress it
 * away, as it could a body padded with spaces (docs/performance.md, Storage).
 */
export function benchBody(i: number): Buffer {
  const head = JSON.stringify({ orderId: `order-${i}`, customer: `c-${i % 977}`, lines: [{ sku: 48213 + (i % 50), qty: 1 + (i % 3) }], id: randomUUID(), payload: '' })
  const fill = BODY_BYTES - head.length
  return Buffer.from(`${head.slice(0, -2)}${randomBytes(Math.ceil((fill * 3) / 4)).toString('base64').slice(0, fill)}"}`)
}

/**
 * The bare pipelines' table `bare (id, body)` and the write of one batch into it: one multi-row INSERT, prepared for
 * full batches, committed on its own (autocommit) before the caller acknowledges.
 */
export async function bareTable(client: pg.Client, batch: number): Promise<(rows: readonly (readonly [string, Buffer])[]) => Promise<void>> {
  await client.query('CREATE TABLE bare (id text PRIMARY KEY, body bytea NOT NULL)')
  const insert = (rows: number) => `INSERT INTO bare VALUES ${Array.from({ length: rows }, (_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(',')}`
  const fullBatch = insert(batch)
  return async (rows) => {
    const full = rows.length === batch
    await client.query({ name: full ? 'bare' : undefined, text: full ? fullBatch : insert(rows.length), values: rows.flat() })
  }
}

/**
 * Starts the built worker (startWorker) and waits until `ready` says it works, so that start-up, migration and
 * connecting are not counted per message; prints its memory at rest.
 */
export async function startMeasuredWorker(env: Record<string, string>, ready: () => Promise<boolean>): Promise<ChildProcess> {
  const worker = await startWorker(env)
  for (let waited = 0; !(await ready()); waited += 100) {
    if (worker.exitCode !== null || waited > 120_000) throw new Error('the worker did not start within two minutes')
    await sleep(100)
  }
  console.log(`lazarus worker started: RSS ${rssMiB(worker.pid!)} MiB at rest (peak ${peakRssMiB(worker.pid!)} MiB during start-up)`)
  return worker
}

/**
 * Waits until `total` rows after `afterId` are in dead_letters, sampling the worker's peak RSS; gives up when nothing
 * new was stored for 30 s (with the sources' last errors) or after 10 minutes. Returns the peak RSS in MiB.
 */
export async function waitForStoredRows(options: { client: pg.Client; worker: ChildProcess; total: number; afterId: string; what: string }): Promise<number> {
  const { client, worker, total, afterId, what } = options
  let peak = 0
  let stored = 0
  let progressAt = 0
  for (let waited = 0; stored < total; waited += 250) {
    await sleep(250)
    if (worker.pid) peak = Math.max(peak, peakRssMiB(worker.pid))
    const now = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters WHERE id > $1::bigint', [afterId])).rows[0].n
    if (now > stored) progressAt = waited
    stored = now
    if (waited - progressAt > 30_000) {
      const { rows: errors } = await client.query<{ last_error: string | null }>('SELECT last_error FROM sources WHERE last_error IS NOT NULL')
      worker.kill('SIGKILL')
      throw new Error(`${what} stalled at ${stored} of ${total}: ${errors.map((e) => e.last_error).join('; ') || 'no error reported'}`)
    }
    if (waited > 600_000) throw new Error(`${what} stored only ${stored} of ${total} in 10 minutes`)
  }
  return peak
}

/**
 * The rate of the rows after `afterId`, from their commit times: ingested_at is the transaction time of each batch,
 * so one batch's share is added for N rows to span N intervals, not N-1.
 */
export async function storedRate(options: { client: pg.Client; total: number; afterId: string; batch: number }): Promise<number> {
  const { client, total, afterId, batch } = options
  const { rows } = await client.query<{ seconds: number }>('SELECT extract(epoch FROM max(ingested_at) - min(ingested_at))::float8 AS seconds FROM dead_letters WHERE id > $1::bigint', [afterId])
  return total / (rows[0].seconds * (total / (total - batch)))
}

export async function stopWorker(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  worker.kill('SIGTERM')
  await exited
}
