import { createHash, randomUUID } from 'node:crypto'
import type { Channel, ChannelModel, ConsumeMessage, Options } from '@/lib/server/platform/broker/amqplib'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { startReplayExecutor, type ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { replaySettings, type ReplaySettings } from '@/lib/server/replay/replay-settings'
import { brokerConnection, waitFor } from './broker'
import { createTestDb, type TestDb } from './test-db'
import { composition } from '@/lib/server/platform/process/composition'

export type ReplayBed = { db: TestDb; connection: ChannelModel; channel: Channel; close(): Promise<void> }

/**
 * What the replay tests publish to: a test database, and on the real broker a direct exchange routing `key` to the
 * work queue the replayed messages should reach. close() removes both and drops the database.
 */
export async function openReplayBed(names: { exchange: string; work: string; key: string }): Promise<ReplayBed> {
  const db = await createTestDb()
  const connection = await brokerConnection()
  const channel = await connection.createChannel()
  await channel.assertExchange(names.exchange, 'direct', { durable: false })
  await channel.assertQueue(names.work, { durable: false })
  await channel.bindQueue(names.work, names.exchange, names.key)
  return {
    db,
    connection,
    channel,
    async close() {
      await channel.deleteQueue(names.work).catch(() => {})
      await channel.deleteExchange(names.exchange).catch(() => {})
      await connection.close()
      await db.drop()
    },
  }
}

/** An in-process replay executor with test-friendly timings. */
export function startTestExecutor(db: Db, overrides: Partial<ReplaySettings> = {}): ReplayExecutor {
  return startReplayExecutor({ db, control: composition().control, work: composition().replayWork, settings: replaySettings(getConfig(), { pollMs: 100, leaseMs: 3_000, ...overrides }) })
}

export type JobState = {
  id: string; status: string; total: number; published: number; confirmed: number; unroutable: number; failed: number
  skipped: number; released: number; cancelled: number; error: string | null
}

export async function jobState(sql: Sql, id: string): Promise<JobState> {
  const { rows } = await sql.query<JobState>(
    `SELECT id::text, status, total, published, confirmed, unroutable, failed, skipped, released, cancelled, error FROM replay_jobs WHERE id = $1::bigint`,
    [id],
  )
  return rows[0]
}

export async function waitForJob(sql: Sql, id: string, statuses: string[] = ['completed', 'cancelled', 'failed'], timeoutMs = 60_000): Promise<JobState> {
  return waitFor(async () => {
    const job = await jobState(sql, id)
    return statuses.includes(job.status) ? job : null
  }, { timeoutMs, intervalMs: 50, what: `replay job ${id} to reach ${statuses.join('/')}` })
}

/**
 * A work queue that dead-letters into `dlq` through the default exchange, bound to `exchange` (direct) with `key`:
 * the retry-less topology of docs/rabbitmq.md#dead-lettering reduced to one hop.
 */
export async function declareWorkTopology(channel: Channel, names: { exchange: string; key: string; work: string; dlq: string; type?: string }): Promise<void> {
  await channel.assertExchange(names.exchange, names.type ?? 'direct', { durable: false, autoDelete: false })
  await channel.assertQueue(names.dlq, { durable: false })
  await channel.assertQueue(names.work, { durable: false, deadLetterExchange: '', deadLetterRoutingKey: names.dlq })
  await channel.bindQueue(names.work, names.exchange, names.key)
}

/** A source for `dlq` whose entity is the body's `/orderId` and whose version its `/version` (a number); its id. */
export async function insertOrderSource(sql: Sql, dlq: string): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO sources (vhost, queue, entity_key, entity_version) VALUES ('/', $1, '{"kind":"jsonPointer","pointer":"/orderId"}', '{"kind":"jsonPointer","pointer":"/version","type":"number"}') RETURNING id::text`,
    [dlq],
  )
  return rows[0].id
}

/** Undoes declareWorkTopology, for an afterAll (a channel that never opened, or a name already gone, is skipped). */
export async function deleteWorkTopology(channel: Channel | undefined, names: { exchange: string; work: string; dlq: string }): Promise<void> {
  await channel?.deleteQueue(names.work).catch(() => {})
  await channel?.deleteQueue(names.dlq).catch(() => {})
  await channel?.deleteExchange(names.exchange).catch(() => {})
}

/** Publishes messages to `exchange`, then rejects each from `work` (no requeue) so RabbitMQ dead-letters it. */
export async function deadLetterThrough(
  connection: ChannelModel,
  options: { exchange: string; key: string; work: string; messages: { body: Buffer; options?: Options.Publish }[] },
): Promise<void> {
  const publisher = await connection.createConfirmChannel()
  for (const m of options.messages) publisher.publish(options.exchange, options.key, m.body, m.options ?? {})
  await publisher.waitForConfirms()
  await publisher.close()
  const consumer = await connection.createChannel()
  let rejected = 0
  await new Promise<void>((resolve) => {
    void consumer.consume(options.work, (message) => {
      if (!message) return
      consumer.nack(message, false, false)
      if (++rejected === options.messages.length) resolve()
    })
  })
  await consumer.close()
}

/** Collects deliveries from a queue (auto-ack) until `count` arrived, or the timeout, then cancels. */
export async function collect(connection: ChannelModel, queue: string, count: number, timeoutMs = 30_000): Promise<ConsumeMessage[]> {
  const channel = await connection.createChannel()
  const received: ConsumeMessage[] = []
  let done!: () => void
  const finished = new Promise<void>((resolve) => (done = resolve))
  await channel.prefetch(2000)
  const { consumerTag } = await channel.consume(
    queue,
    (message) => {
      if (!message) return
      received.push(message)
      channel.ack(message)
      if (received.length >= count) done()
    },
    { noAck: false },
  )
  const timer = setTimeout(done, timeoutMs)
  await finished
  clearTimeout(timer)
  await channel.cancel(consumerTag).catch(() => {})
  await channel.close().catch(() => {})
  return received
}

export const replayIdOf = (message: ConsumeMessage) => message.properties.headers?.['x-lazarus-replay-id'] as string | undefined

/**
 * Stored rows for bulk tests (storeBatch is the drainer's own write path): 1 KiB JSON bodies that failed in `originQueue`,
 * published to `originExchange` with `originKey`.
 */
export function bulkRows(count: number, options: { originExchange: string; originKey: string; originQueue: string; entity?: (i: number) => string | null; start?: number }): IngestRow[] {
  const rows: IngestRow[] = []
  const base = Date.parse('2026-11-01T10:00:00Z')
  for (let i = 0; i < count; i++) {
    const n = (options.start ?? 0) + i
    const body = Buffer.alloc(1024, ' ')
    body.write(JSON.stringify({ n, orderId: `order-${n}`, id: randomUUID() }))
    const failedAt = new Date(base + n * 10)
    rows.push({
      fingerprint: createHash('sha256').update(body).digest(),
      redelivered: false, body, bodyEncoding: 'json', bodyPreview: body.toString('utf8').trimEnd(),
      propertiesJson: JSON.stringify({ contentType: 'application/json', messageId: `m-${n}`, deliveryMode: 2 }),
      headersJson: JSON.stringify({ 'x-n': { t: 'I', v: n }, 'x-retries': { t: 'l', v: '3' }, 'x-death': { t: 'A', v: [] } }),
      deliveryExchange: '', deliveryRoutingKey: 'dlq', deathReason: 'rejected', attempts: 1,
      originExchange: options.originExchange, originRoutingKeys: [options.originKey], originQueue: options.originQueue,
      firstDeathAt: failedAt, lastDeathAt: failedAt, failedAt,
      errorType: 'com.acme.StockException', errorMessage: `SKU ${n} out of stock`, errorStack: null, failureKind: 'exhausted',
      service: 'orders', serviceVersion: '1.0.0', framework: 'lazarus', entityKey: options.entity ? options.entity(n) : null,
      signature: 'v1:bulk0000000001', title: 'StockException: SKU <int> out of stock', messagePattern: 'SKU <int> out of stock',
      flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    })
  }
  return rows
}

/** Stores `count` rows in batches of 1000 through storeBatch; returns the source id. */
export async function storeBulk(sql: Sql, queue: string, rows: IngestRow[]): Promise<string> {
  const { rows: source } = await sql.query<{ id: string }>(
    `INSERT INTO sources (vhost, queue, enabled) VALUES ('/', $1, false) ON CONFLICT (vhost, queue) DO UPDATE SET queue = excluded.queue RETURNING id::text`,
    [queue],
  )
  for (let i = 0; i < rows.length; i += 1000) await storeBatch({ sql, sourceId: source[0].id, sourceLabel: queue, rows: rows.slice(i, i + 1000) })
  return source[0].id
}

/**
 * What create-replay writes for a job, without planning against a broker: a running job of `kind`, its messages
 * `replaying`, one item each. Returns the job id.
 */
export async function freezeJob({ sql, kind, ids, actor }: { sql: Sql; kind: 'replay' | 'release'; ids: string[]; actor: string }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO replay_jobs (kind, status, selection, target, rate_per_second, plan, created_by, total)
     VALUES ($1, 'running', '{}', '{"type":"queue"}', 1000, '{}', $3, $2) RETURNING id::text`,
    [kind, ids.length, actor],
  )
  const jobId = rows[0].id
  await sql.query(
    `WITH marked AS (
       INSERT INTO dead_letter_states AS st (dead_letter_id, status, status_changed_at, failed_at)
       SELECT id, 'replaying', now(), failed_at FROM dead_letters WHERE id = ANY($2::bigint[])
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'replaying' RETURNING dead_letter_id
     )
     INSERT INTO replay_items (job_id, seq, dead_letter_id, kind, replay_id)
     SELECT $1::bigint, row_number() OVER (ORDER BY dead_letter_id)::int, dead_letter_id, $3, gen_random_uuid()::text FROM marked`,
    [jobId, ids, kind],
  )
  return jobId
}
