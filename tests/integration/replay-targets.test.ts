import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getConfig, parseConfig } from '@/lib/server/platform/config'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { createReplay } from '@/lib/server/replay/create-replay'
import { replaySettings } from '@/lib/server/replay/replay-settings'
import { getReplayTargetSettings, updateReplayTargetSettings } from '@/lib/server/replay/replay-target-settings'
import { updateReplayTargetSettingsSchema } from '@/lib/shared/schemas/replay-targets'
import type { CreateReplayInput, ReplayCreatedDto, ReplayDryRunDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName } from '../helpers/broker'
import { bulkRows, storeBulk } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

/**
 * Where a replay may go. Custom targets: never amq.* or Lazarus' control and hold exchanges, other exchanges only when
 * an admin's allow-list matches them, the default exchange only to each message's own failed queue. Messages whose
 * stored origin (written by whoever published them) points at such a place are left out of every target type. Dry
 * runs refuse the same things, and plans see only the sources the caller may.
 */
describe('replay targets', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  const { LAZARUS_CONTROL_EXCHANGE: control, LAZARUS_HOLD_QUEUE: hold } = getConfig()
  const prefix = uniqueName('orders')
  const allowed = { exchange: `${prefix}.retry`, queue: uniqueName('retry_q') }
  const origin = { exchange: uniqueName('origin_x'), key: 'order.created', work: uniqueName('targets_work') }
  const ids: Record<'legit' | 'control' | 'amq' | 'victim' | 'direct' | 'hold' | 'other', string[]> = {
    legit: [], control: [], amq: [], victim: [], direct: [], hold: [], other: [],
  }
  let sourceA: string
  let sourceB: string
  let groupId: string

  const plan = async (selection: CreateReplayInput['selection'], target?: ReplayTarget, options: { sourceIds?: string[] | null } = {}) =>
    ((await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection, target, dryRun: true }, actor: 'op', ...options })) as ReplayDryRunDto).plan
  const refused = async (target: ReplayTarget, dryRun: boolean) => {
    const error = await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: ids.legit }, target, dryRun }, actor: 'op' }).then(() => null, (e: unknown) => e)
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).status).toBe(422)
    return error as AppError
  }

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertExchange(origin.exchange, 'direct', { durable: false })
    await channel.assertQueue(origin.work, { durable: false })
    await channel.bindQueue(origin.work, origin.exchange, origin.key)
    await channel.assertExchange(allowed.exchange, 'direct', { durable: false })
    await channel.assertQueue(allowed.queue, { durable: false })
    await channel.bindQueue(allowed.queue, allowed.exchange, 'retry')

    // Source A: three honest dead letters, and five whose origin headers a publisher could have written.
    const dlqA = uniqueName('targets_a_dlq')
    const rows = (originExchange: string, originKey: string, originQueue: string, start: number, count = 1) => bulkRows(count, { originExchange, originKey, originQueue, start })
    sourceA = await storeBulk(db.sql, dlqA, [
      ...rows(origin.exchange, origin.key, origin.work, 0, 3),
      ...rows(control, 'pause', origin.work, 10),
      ...rows('amq.topic', 'x', origin.work, 11),
      ...rows('', 'victim.work', origin.work, 12),
      ...rows('', origin.work, origin.work, 13),
      ...rows(origin.exchange, origin.key, hold, 14),
    ])
    sourceB = await storeBulk(db.sql, uniqueName('targets_b_dlq'), rows(origin.exchange, origin.key, origin.work, 20, 2))
    const { rows: stored } = await db.sql.query<{ id: string; source_id: string; n: number }>(
      `SELECT id::text, source_id::text, (convert_from(body, 'UTF8')::jsonb->>'n')::int AS n FROM dead_letters ORDER BY id`,
    )
    for (const r of stored) {
      const kind = r.source_id === sourceB ? 'other' : r.n < 10 ? 'legit' : (['control', 'amq', 'victim', 'direct', 'hold'] as const)[r.n - 10]
      ids[kind].push(r.id)
    }
    groupId = (await db.sql.query<{ id: string }>('SELECT DISTINCT group_id::text AS id FROM dead_letters')).rows[0].id
  })

  afterAll(async () => {
    for (const q of [origin.work, allowed.queue]) await channel?.deleteQueue(q).catch(() => {})
    for (const x of [origin.exchange, allowed.exchange]) await channel?.deleteExchange(x).catch(() => {})
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  it("refuses custom targets on amq.* and Lazarus' control and hold exchanges, dry runs included", async () => {
    for (const exchange of ['amq.direct', 'amq.rabbitmq.trace', 'amq.topic', control, hold]) {
      for (const dryRun of [true, false]) {
        const error = await refused({ type: 'custom', exchange, routingKey: 'k' }, dryRun)
        expect(error.message).toMatch(/^Replays never go to /)
        expect(error.details).toMatchObject({ refused: 'reserved-exchange', target: { exchange } })
      }
    }
    const { rows } = await db.sql.query('SELECT 1 FROM replay_jobs')
    expect(rows).toHaveLength(0)
  })

  it('refuses every named custom exchange while the allow-list is empty, and says where to set it', async () => {
    expect(await getReplayTargetSettings({ db })).toEqual({ customTargetPatterns: [], environmentPatterns: [], updatedAt: null, updatedBy: null })
    for (const dryRun of [true, false]) {
      const error = await refused({ type: 'custom', exchange: allowed.exchange, routingKey: 'retry' }, dryRun)
      expect(error.message).toMatch(/Custom replay targets are not allowed.*PUT \/api\/settings\/replay-targets or LAZARUS_REPLAY_TARGET_PATTERNS/)
      expect(error.details).toMatchObject({ refused: 'not-allow-listed', allowedPatterns: [] })
    }
  })

  it('takes custom exchanges the allow-list matches, and refuses the others with the list', async () => {
    const saved = await updateReplayTargetSettings({ db, input: updateReplayTargetSettingsSchema.parse({ customTargetPatterns: [`${prefix}.*`, 'billing.retry', 'billing.retry'] }), actor: 'root' })
    expect(saved).toMatchObject({ customTargetPatterns: [`${prefix}.*`, 'billing.retry'], updatedBy: 'root' })
    expect(await getReplayTargetSettings({ db })).toEqual(saved)

    const ok = await plan({ ids: ids.legit }, { type: 'custom', exchange: allowed.exchange, routingKey: 'retry' })
    expect(ok).toMatchObject({ replayable: 3, canRun: true, targets: [{ exchange: allowed.exchange, exists: true, queues: 1, queueNames: [allowed.queue] }] })
    // '*' spans dots; an exchange that does not exist is allowed and reported missing as before.
    const deeper = await plan({ ids: ids.legit }, { type: 'custom', exchange: `${prefix}.eu.retry`, routingKey: 'retry' })
    expect(deeper).toMatchObject({ canRun: false, targets: [{ exists: false }] })
    expect((await plan({ ids: ids.legit }, { type: 'custom', exchange: 'billing.retry', routingKey: 'k' })).targets[0].exchange).toBe('billing.retry')

    const error = await refused({ type: 'custom', exchange: 'billing.retry.dlq', routingKey: 'k' }, true)
    expect(error.message).toMatch(/Exchange "billing\.retry\.dlq" is not an allowed custom replay target \(allowed: .*billing\.retry\)/)
    expect(error.details).toMatchObject({ refused: 'not-allow-listed', allowedPatterns: [`${prefix}.*`, 'billing.retry'] })

    // The allow-list cannot reopen what is never a target.
    await updateReplayTargetSettings({ db, input: updateReplayTargetSettingsSchema.parse({ customTargetPatterns: ['*'] }), actor: 'root' })
    expect((await refused({ type: 'custom', exchange: control, routingKey: 'pause' }, true)).details).toMatchObject({ refused: 'reserved-exchange' })
    expect((await plan({ ids: ids.legit }, { type: 'custom', exchange: allowed.exchange, routingKey: 'retry' })).canRun).toBe(true)
    await updateReplayTargetSettings({ db, input: { customTargetPatterns: [] }, actor: 'root' })
  })

  it('adds the patterns of LAZARUS_REPLAY_TARGET_PATTERNS to the stored ones', async () => {
    const config = parseConfig({ ...process.env, LAZARUS_REPLAY_TARGET_PATTERNS: ` ${prefix}.*, billing.retry ` })
    expect(config.LAZARUS_REPLAY_TARGET_PATTERNS).toEqual([`${prefix}.*`, 'billing.retry'])
    expect(await getReplayTargetSettings({ db, config })).toMatchObject({ customTargetPatterns: [], environmentPatterns: [`${prefix}.*`, 'billing.retry'] })
    const settings = replaySettings(config)
    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: ids.legit }, target: { type: 'custom', exchange: allowed.exchange, routingKey: 'retry' }, dryRun: true }, actor: 'op', settings })) as ReplayDryRunDto
    expect(dry.plan.canRun).toBe(true)
    expect(() => parseConfig({ ...process.env, LAZARUS_REPLAY_TARGET_PATTERNS: 'amq.*' })).toThrow(/LAZARUS_REPLAY_TARGET_PATTERNS/)
  })

  it("sends a default-exchange custom target only to each message's own failed queue", async () => {
    const own = await plan({ ids: ids.legit }, { type: 'custom', exchange: '', routingKey: origin.work })
    expect(own).toMatchObject({ replayable: 3, canRun: true, excluded: [], targets: [{ exchange: '', routingKey: origin.work, queues: 1 }] })

    const other = await plan({ ids: ids.legit }, { type: 'custom', exchange: '', routingKey: 'victim.work' })
    expect(other).toMatchObject({ matched: 3, replayable: 0, canRun: false, excluded: [{ reason: 'target-refused', count: 3 }] })
    // Nothing was looked up for the refused key: a dry run cannot tell whether "victim.work" exists.
    expect(other.targets).toEqual([])
    expect(other.warnings.join(' ')).toMatch(/3 messages would go where replays never go/)
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: ids.legit }, target: { type: 'custom', exchange: '', routingKey: 'victim.work' } }, actor: 'op' })).rejects.toMatchObject({
      code: 'unprocessable',
      message: expect.stringMatching(/None of the selected messages can be replayed to this target/),
    })
  })

  it('leaves out messages whose stored origin points at a refused place, whatever the target type', async () => {
    const forged = [...ids.control, ...ids.amq, ...ids.victim, ...ids.direct, ...ids.hold]
    const bySource = await plan({ ids: [...ids.legit, ...forged] }, { type: 'source' })
    expect(bySource).toMatchObject({ matched: 8, replayable: 5, excluded: [{ reason: 'target-refused', count: 3 }] })
    expect(bySource.excluded[0].sampleIds.sort()).toEqual([...ids.control, ...ids.amq, ...ids.victim].sort())
    expect(bySource.targets.map((t) => t.exchange).sort()).toEqual(['', origin.exchange].sort())
    expect(bySource.targets.find((t) => t.exchange === '')).toMatchObject({ routingKey: origin.work })

    // The failed-queue target: fine for all of them but the one that "failed in" the hold queue.
    const byQueue = await plan({ ids: [...ids.legit, ...forged] }, { type: 'queue' })
    expect(byQueue).toMatchObject({ replayable: 7, excluded: [{ reason: 'target-refused', count: 1, sampleIds: ids.hold }] })

    // The job is frozen without them.
    const job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [...ids.control, ...ids.amq, ...ids.direct] }, pauseEntities: false }, actor: 'op' })) as ReplayCreatedDto
    expect(job.plan).toMatchObject({ matched: 3, replayable: 1 })
    const { rows: items } = await db.sql.query<{ dead_letter_id: string; exchange: string; routing_key: string }>(
      'SELECT dead_letter_id::text, exchange, routing_key FROM replay_items WHERE job_id = $1::bigint',
      [job.id],
    )
    expect(items).toEqual([{ dead_letter_id: ids.direct[0], exchange: '', routing_key: origin.work }])
    const { rows: untouched } = await db.sql.query<{ status: string }>('SELECT status FROM message_statuses WHERE dead_letter_id = ANY($1::bigint[])', [[...ids.control, ...ids.amq]])
    expect(untouched.map((r) => r.status)).toEqual(['dead', 'dead'])
  })

  it('plans and replays only the sources the caller may see (sourceIds)', async () => {
    const all = await plan({ groupId })
    expect(all.matched).toBe(10)
    const onlyB = await plan({ groupId }, undefined, { sourceIds: [sourceB] })
    expect(onlyB).toMatchObject({ matched: 2, replayable: 2, entities: { sources: [{ id: sourceB, messages: 2 }] } })
    // Ids of another source are simply not there: not counted, not excluded, not named.
    const foreign = await plan({ ids: [...ids.other, ...ids.legit] }, { type: 'queue' }, { sourceIds: [sourceB] })
    expect(foreign).toMatchObject({ matched: 2, excluded: [] })
    expect((await plan({ groupId }, undefined, { sourceIds: [] })).matched).toBe(0)
    expect((await plan({ groupId }, undefined, { sourceIds: [sourceA, sourceB] })).matched).toBe(10)

    const job = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId }, target: { type: 'queue' }, pauseEntities: false }, actor: 'op', sourceIds: [sourceB] })) as ReplayCreatedDto
    const { rows } = await db.sql.query<{ dead_letter_id: string }>('SELECT dead_letter_id::text FROM replay_items WHERE job_id = $1::bigint ORDER BY dead_letter_id', [job.id])
    expect(rows.map((r) => r.dead_letter_id)).toEqual([...ids.other].sort())
    await expect(createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId }, dryRun: true }, actor: 'op', sourceIds: ['1 OR true'] })).rejects.toThrow(/is not a source id/)
  })

  it('validates the allow-list', () => {
    const parse = (customTargetPatterns: unknown) => updateReplayTargetSettingsSchema.safeParse({ customTargetPatterns })
    expect(parse(['amq.*']).success).toBe(false)
    expect(parse(['orders retry']).success).toBe(false)
    expect(parse(['orders.\u0000']).success).toBe(false)
    expect(parse(['']).success).toBe(false)
    expect(parse(['x'.repeat(256)]).success).toBe(false)
    expect(parse(Array.from({ length: 101 }, (_, i) => `x${i}`)).success).toBe(false)
    expect(updateReplayTargetSettingsSchema.safeParse({ customTargetPatterns: [], extra: 1 }).success).toBe(false)
    expect(parse([' orders.* ', 'orders.*', 'billing/eu:retry-1_a'])).toMatchObject({ success: true, data: { customTargetPatterns: ['orders.*', 'billing/eu:retry-1_a'] } })
  })
})
