import { execFileSync } from 'node:child_process'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getConfig } from '@/lib/server/platform/config'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { replaySettings } from '@/lib/server/replay/replay-settings'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { uniqueName, waitFor } from '../helpers/broker'
import { type ReplayBed, bulkRows, collect, jobState, openReplayBed, startTestExecutor, storeBulk, waitForJob } from '../helpers/replay'
import type { TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

/**
 * docs/rabbitmq.md#connections-and-channels: under a resource alarm RabbitMQ blocks publishing connections. A real
 * memory alarm is raised (the watermark set below what the node uses) and lifted again; integration files run one at
 * a time, so no other test publishes meanwhile. The broker's own setting is read first and always restored.
 */
const rabbitmqctl = (...args: string[]) => execFileSync('rabbitmqctl', args, { encoding: 'utf8', timeout: 60_000 }).trim()

function readWatermark(): string[] {
  const raw = rabbitmqctl('eval', 'vm_memory_monitor:get_vm_memory_high_watermark().')
  const absolute = /^\{absolute,\s*(\d+)\}$/.exec(raw)
  return absolute ? ['absolute', absolute[1]] : [raw]
}

describe('replay under a broker resource alarm', () => {
  let db: TestDb
  let bed: ReplayBed
  let connection: ChannelModel
  let channel: Channel
  let executor: ReplayExecutor | null = null
  let original: string[]
  const exchange = uniqueName('blk_x')
  const work = uniqueName('blk_work')
  let serial = 0

  const raiseAlarm = () => rabbitmqctl('set_vm_memory_high_watermark', 'absolute', '1')
  const liftAlarm = () => rabbitmqctl('set_vm_memory_high_watermark', ...original)

  async function storeMessages(count: number): Promise<string[]> {
    const rows = bulkRows(count, { originExchange: exchange, originKey: 'k', originQueue: work, start: serial })
    serial += count
    await storeBulk(db.sql, uniqueName('blk_dlq'), rows)
    const { rows: stored } = await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE status = 'dead' AND status_reason IS NULL ORDER BY id`)
    return stored.map((r) => r.id)
  }

  async function replay(ids: string[]): Promise<string> {
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids }, ratePerSecond: 10_000 }, actor: 'ops', settings: replaySettings(getConfig()) })) as ReplayCreatedDto
    executor?.wake()
    return created.id
  }

  beforeAll(async () => {
    original = readWatermark()
    bed = await openReplayBed({ exchange, work, key: 'k' })
    ;({ db, connection, channel } = bed)
  })

  afterEach(async () => {
    liftAlarm()
    await executor?.stop()
    executor = null
    await channel.purgeQueue(work)
  })

  afterAll(async () => {
    liftAlarm()
    await bed?.close()
  })

  it('holds publishing while the broker blocks it, then confirms every message once the alarm clears', async () => {
    const ids = await storeMessages(40)
    executor = startTestExecutor(db)
    raiseAlarm()
    const jobId = await replay(ids)
    const blocked = await waitFor(async () => executor!.status().blocked, { what: 'the executor to report the block', timeoutMs: 30_000 })
    expect(blocked).toMatch(/memory/i)
    // The run holds its job while blocked: it renews the lease twice (each renewal follows a heartbeat that checks the
    // confirm timeout), and meanwhile nothing was confirmed, delivered or given up on.
    const lease = async () => (await db.sql.query<{ at: Date | null }>('SELECT lease_expires_at AS at FROM replay_jobs WHERE id = $1::bigint', [jobId])).rows[0].at?.getTime() ?? 0
    for (let renewals = 0, seen = await lease(); renewals < 2; renewals++) {
      const previous = seen
      seen = await waitFor(async () => {
        const at = await lease()
        return at > previous && at
      }, { what: 'the run to renew its lease while blocked', timeoutMs: 30_000 })
    }
    expect(await jobState(db.sql, jobId)).toMatchObject({ status: 'running', confirmed: 0, failed: 0 })
    expect((await channel.checkQueue(work)).messageCount).toBe(0)

    liftAlarm()
    const job = await waitForJob(db.sql, jobId)
    expect(job).toMatchObject({ status: 'completed', confirmed: 40, failed: 0, unroutable: 0 })
    expect(executor.status().blocked).toBeNull()
    const received = await collect(connection, work, 40)
    expect(new Set(received.map((m) => m.properties.messageId)).size).toBe(40)
    const { rows } = await db.sql.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE id = ANY($1::bigint[]) GROUP BY 1', [ids])
    expect(rows).toEqual([{ status: 'replayed', n: 40 }])
  })

  it('a confirm that never comes (blocked past the timeout) leaves the messages dead with the reason, none marked replayed', async () => {
    const ids = await storeMessages(20)
    executor = startTestExecutor(db, { confirmTimeoutMs: 1_500 })
    raiseAlarm()
    const jobId = await replay(ids)
    const job = await waitForJob(db.sql, jobId, ['completed', 'failed'], 60_000)
    expect(job).toMatchObject({ confirmed: 0, failed: 20 })
    const { rows } = await db.sql.query<{ status: string; status_reason: string | null }>('SELECT status, status_reason FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE id = ANY($1::bigint[])', [ids])
    expect(rows).toHaveLength(20)
    for (const row of rows) {
      expect(row.status).toBe('dead')
      expect(row.status_reason).toMatch(/^not confirmed: no answer from the broker within 1500 ms \(publishing blocked: .*memory/i)
    }

    // Whatever the broker still takes in once the alarm clears carries its replay id, so consumers can de-duplicate,
    // and the stored copies stay dead: a later replay can send them again, nothing is lost either way.
    // Once the executor hears that its connection is unblocked, the broker reads again what it held back on it, in order.
    liftAlarm()
    await waitFor(async () => executor!.status().blocked === null, { what: 'the executor to hear the block lifted', timeoutMs: 30_000 })
    const arrived = (await channel.checkQueue(work)).messageCount
    const late = arrived > 0 ? await collect(connection, work, arrived) : []
    for (const message of late) expect(String(message.properties.headers?.['x-lazarus-replay-id'] ?? '')).not.toBe('')
    const { rows: after } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letters JOIN message_statuses ON dead_letter_id = id WHERE id = ANY($1::bigint[]) AND status = 'dead'`, [ids])
    expect(after[0].n).toBe(20)
  })
})
