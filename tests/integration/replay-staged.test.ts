import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channel, ChannelModel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { evaluateAlerts } from '@/lib/server/engines/alert-evaluator/evaluate-alerts'
import { cancelReplay } from '@/lib/server/replay/cancel-replay'
import { createReplay } from '@/lib/server/replay/create-replay'
import { getReplay } from '@/lib/server/replay/get-replay'
import { getReplayRefailures } from '@/lib/server/replay/get-replay-refailures'
import { countReplayArrived } from '@/lib/server/replay/replay-arrived'
import { resumeReplay } from '@/lib/server/replay/resume-replay'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { declareWorkTopology, deleteWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

const TOTAL = 200
/** Every fourth order is a refund: the type the application's bug fails. */
const isRefund = (n: number) => n % 4 === 0

/*
 * Staged replays against a real application: a consumer on a work queue that dead-letters (nack → DLX → terminal DLQ)
 * into a DLQ the drainer drains. Its replayed copies that fail again come back through the drainer with their
 * x-lazarus-replay-id and halt the job.
 */
describe('staged replays: canary, halt, resume', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let app: Channel
  let drainer: Drainer
  let executor: ReplayExecutor
  let groupId: string
  const names = { exchange: uniqueName('stage_x'), key: 'order.changed', work: uniqueName('stage_work'), dlq: uniqueName('stage_dlq') }
  /** What the application does with a message: 'all' fails everything, 'refunds' fails refunds, 'refunds-new-bug' parks refunds with a new error, 'none' acks. */
  let bug: 'all' | 'refunds' | 'refunds-new-bug' | 'none' = 'all'
  const delivered: { n: number; replayId: string | undefined }[] = []

  const handle = (m: ConsumeMessage | null) => {
    if (!m) return
    const n = Number(JSON.parse(m.content.toString()).n)
    delivered.push({ n, replayId: m.properties.headers?.['x-lazarus-replay-id'] as string | undefined })
    if (bug === 'all' || (bug === 'refunds' && isRefund(n))) return app.nack(m, false, false)
    if (bug === 'refunds-new-bug' && isRefund(n)) {
      // As Spring's RepublishMessageRecoverer does: the failed message goes to the DLQ with the exception's headers.
      app.sendToQueue(names.dlq, m.content, { ...m.properties, headers: { ...m.properties.headers, 'x-error-type': 'RefundLedgerLocked', 'x-exception-message': 'ledger locked' } })
    }
    app.ack(m)
  }

  const stored = async () => (await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters')).rows[0].n

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    app = await connection.createChannel()
    await app.prefetch(50)
    await app.consume(names.work, handle)
    ;({ drainer } = await drainQueues(db, [names.dlq]))
    // The incident: every order fails once and is stored.
    const publisher = await connection.createConfirmChannel()
    for (let n = 0; n < TOTAL; n++) {
      publisher.publish(names.exchange, names.key, Buffer.from(JSON.stringify({ n, type: isRefund(n) ? 'refund' : 'order' })), {
        messageId: `order-${n}`, contentType: 'application/json', headers: { 'x-error-type': 'OrderRejected' },
      })
    }
    await publisher.waitForConfirms()
    await publisher.close()
    await waitFor(async () => (await stored()) === TOTAL, { what: `${TOTAL} dead letters stored`, timeoutMs: 30_000 })
    const { rows } = await db.sql.query<{ id: string }>('SELECT id::text FROM error_groups')
    expect(rows).toHaveLength(1)
    groupId = rows[0].id
    await db.sql.query("INSERT INTO alert_rules (kind, created_by) VALUES ('replay-halted', 'test')")
    executor = startTestExecutor(db, { pollMs: 100 })
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await deleteWorkTopology(channel, names)
    await connection?.close()
    await db?.drop()
  })

  it('offers staging from the admin\'s size on, and stages a job only when asked', async () => {
    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId }, dryRun: true }, actor: 'stage-test' })) as ReplayDryRunDto
    // 200 messages are below the default size (1000): not suggested, but the defaults are there to switch on.
    expect(dry.plan).toMatchObject({ staging: null, stagingSuggested: false, stagedFromMessages: 1000 })
    expect(dry.plan.stagingDefaults).toMatchObject({ canaryCount: null, canaryPercent: null, rampPercents: [10, 50, 100], haltPercent: 10, haltMinMessages: 5, windowSeconds: 120, windowFrom: 'default' })
    expect(dry.plan.stagingDefaults?.stages.map((s) => s.throughSeq)).toEqual([10, 20, 100, 200])
    await db.sql.query('INSERT INTO replay_confirm_settings (id, large_job_messages, staged_from_messages) VALUES (1, 100, 150)')
    const large = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId }, dryRun: true }, actor: 'stage-test' })) as ReplayDryRunDto
    expect(large.plan).toMatchObject({ staging: null, stagingSuggested: true, stagedFromMessages: 150 })
    const asked = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { groupId }, dryRun: true, staging: {} }, actor: 'stage-test' })) as ReplayDryRunDto
    expect(asked.plan.staging?.stages.map((s) => s.throughSeq)).toEqual([10, 20, 100, 200])
    await db.sql.query('DELETE FROM replay_confirm_settings')
  })

  it('halts after the canary when a share of it fails again, and ramps to the end once resumed after the fix', async () => {
    bug = 'refunds'
    delivered.length = 0
    const created = (await createReplay({
      db,
      control: composition().control, replayWork: composition().replayWork,
      input: { selection: { groupId }, confirmCount: TOTAL, ratePerSecond: 500, staging: { canaryCount: 20, windowSeconds: 30, rampPercents: [50, 100], haltPercent: 10, haltMinMessages: 5 } },
      actor: 'stage-test',
    })) as ReplayCreatedDto
    expect(created.plan.staging?.stages).toEqual([{ throughSeq: 20, size: 20 }, { throughSeq: 100, size: 80 }, { throughSeq: 200, size: 100 }])

    const halted = await waitForJob(db.sql, created.id, ['halted', 'completed', 'failed'], 40_000)
    expect(halted.status).toBe('halted')
    const job = await getReplay({ db, id: created.id })
    // Only the canary went out: orders 0..19, of which 0, 4, 8, 12 and 16 are refunds that failed again.
    expect(job).toMatchObject({ status: 'halted', confirmed: 20, published: 20 })
    expect(job.staging).toMatchObject({ current: 0, haltPercent: 10, haltMinMessages: 5, windowSeconds: 30 })
    expect(job.staging?.halt).toMatchObject({ stage: 0, reason: 'share', outcome: null, evidence: { published: 20, refailed: 5, sharePercent: 25, haltPercent: 10, haltMinMessages: 5, newGroups: [] } })
    expect(new Set(delivered.map((d) => d.n))).toEqual(new Set(Array.from({ length: 20 }, (_, n) => n)))
    // Unpublished items stay in the job; their messages stay 'replaying'.
    const { rows: open } = await db.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM replay_items WHERE job_id = $1::bigint AND status = 'pending'", [created.id])
    expect(open[0].n).toBe(180)

    const refailures = await getReplayRefailures({ db, id: created.id })
    expect(refailures).toMatchObject({ total: 5, counted: 5, groups: [{ id: groupId, count: 5, newGroup: false }] })
    expect(refailures.stages).toEqual([{ index: 0, published: 20, refailed: 5 }, { index: 1, published: 0, refailed: 0 }, { index: 2, published: 0, refailed: 0 }])
    expect(refailures.canary?.filter((c) => c.state === 'failed-again').map((c) => c.seq)).toEqual([1, 5, 9, 13, 17])
    expect(refailures.canary?.filter((c) => c.state === 'no-news')).toHaveLength(15)
    expect(refailures.within?.min).toBeGreaterThanOrEqual(0)
    // The job's own copies that failed again are in its group and arrived after it was planned, but they are not new
    // messages: "N arrived since" counts none of them (nor would its "Replay these" replay them).
    expect(await countReplayArrived({ db, id: created.id })).toMatchObject({ count: 0, selection: { groupId, notCopiesOf: created.id } })

    // The decision and its evidence are audited, and the alert fires like the other kinds.
    const { rows: audit } = await db.sql.query<{ summary: string; details: { reason: string; evidence: { refailed: number } } }>(
      "SELECT summary, details FROM audit_log WHERE action = 'replay.halted' AND subject_id = $1", [created.id])
    expect(audit).toHaveLength(1)
    expect(audit[0].details).toMatchObject({ reason: 'share', evidence: { refailed: 5 } })
    const alerts = await evaluateAlerts({ db })
    expect(alerts.events.filter((e) => e.kind === 'replay-halted').map((e) => e.subject)).toEqual([{ type: 'replay', id: created.id, label: `replay ${created.id}` }])

    // The fix is deployed; the operator resumes. The re-failures seen so far no longer count; the job ramps to the end.
    bug = 'none'
    await expect(resumeReplay({ db, replayWork: composition().replayWork, id: created.id, actor: 'operator' })).resolves.toMatchObject({ status: 'running' })
    await expect(resumeReplay({ db, replayWork: composition().replayWork, id: created.id, actor: 'operator' })).rejects.toMatchObject({ code: 'conflict' })
    // The canary's window (30 s) still runs from its publish; shortened here so the test need not wait for it.
    await db.sql.query('UPDATE replay_jobs SET window_ms = 1000, not_before = NULL WHERE id = $1::bigint', [created.id])
    const done = await waitForJob(db.sql, created.id, ['completed', 'halted', 'failed'], 60_000)
    expect(done).toMatchObject({ status: 'completed', confirmed: TOTAL })
    const after = await getReplay({ db, id: created.id })
    expect(after.staging?.current).toBe(2)
    expect(after.staging?.halt).toMatchObject({ outcome: 'resumed', endedBy: 'operator' })
    expect(after.staging?.stages.every((s) => s.publishedAt !== null || s.index === 2)).toBe(true)
    // Each message went out once.
    const replayed = delivered.filter((d) => d.replayId)
    expect(new Set(replayed.map((d) => d.replayId)).size).toBe(TOTAL)
    expect(replayed).toHaveLength(TOTAL)
    const { rows: resumedAudit } = await db.sql.query("SELECT 1 FROM audit_log WHERE action = 'replay.resumed' AND subject_id = $1", [created.id])
    expect(resumedAudit).toHaveLength(1)
  })

  it('halts at once when a replayed copy fails again in a new error group; a halt unanswered past the timeout is cancelled', async () => {
    // A fresh incident: the first one's messages were all replayed.
    bug = 'all'
    const publisher = await connection.createConfirmChannel()
    const before = await stored()
    const { rows: last } = await db.sql.query<{ id: string }>('SELECT max(id)::text AS id FROM dead_letters')
    for (let n = 1000; n < 1000 + TOTAL; n++) {
      publisher.publish(names.exchange, names.key, Buffer.from(JSON.stringify({ n, type: isRefund(n) ? 'refund' : 'order' })), { messageId: `order-${n}`, headers: { 'x-error-type': 'OrderRejected' } })
    }
    await publisher.waitForConfirms()
    await publisher.close()
    await waitFor(async () => (await stored()) === before + TOTAL, { what: 'the second incident stored', timeoutMs: 30_000 })
    bug = 'refunds-new-bug'
    const { rows: incident } = await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE id > $1::bigint ORDER BY id', [last[0].id])
    const created = (await createReplay({
      db,
      control: composition().control, replayWork: composition().replayWork,
      input: { selection: { ids: incident.map((r) => r.id) }, confirmCount: TOTAL, ratePerSecond: 500, pauseEntities: false, staging: { canaryCount: 10, windowSeconds: 60, rampPercents: [100], haltPercent: 50, haltMinMessages: 5 } },
      actor: 'stage-test',
    })) as ReplayCreatedDto
    const halted = await waitForJob(db.sql, created.id, ['halted', 'completed', 'failed'], 40_000)
    expect(halted).toMatchObject({ status: 'halted', confirmed: 10 })
    const job = await getReplay({ db, id: created.id })
    // One refund in the canary failed again in a group none of the originals were in: below the share, still a halt.
    expect(job.staging?.halt).toMatchObject({ stage: 0, reason: 'new-group', evidence: { newGroups: [{ count: expect.any(Number) }] } })
    expect(job.staging?.halt?.evidence.newGroups[0].title).toContain('RefundLedgerLocked')
    const refailures = await getReplayRefailures({ db, id: created.id })
    expect(refailures.groups.every((g) => g.newGroup)).toBe(true)

    // Nobody answers the halt: once it is older than the timeout (60 min by default) the executor cancels the job.
    await db.sql.query("UPDATE replay_jobs SET halted_at = now() - interval '61 minutes' WHERE id = $1::bigint", [created.id])
    const cancelled = await waitForJob(db.sql, created.id, ['cancelled', 'completed', 'failed'], 30_000)
    expect(cancelled).toMatchObject({ status: 'cancelled', confirmed: 10 })
    const { rows } = await db.sql.query<{ status: string; n: number }>(
      `SELECT coalesce(st.status, 'dead') AS status, count(*)::int AS n FROM replay_items i LEFT JOIN dead_letter_states st ON st.dead_letter_id = i.dead_letter_id
       WHERE i.job_id = $1::bigint AND i.status = 'cancelled' GROUP BY 1`, [created.id])
    expect(rows).toEqual([{ status: 'dead', n: TOTAL - 10 }])
    const after = await getReplay({ db, id: created.id })
    expect(after.staging?.halt).toMatchObject({ outcome: 'timed-out', endedBy: 'lazarus' })
    const { rows: audit } = await db.sql.query("SELECT 1 FROM audit_log WHERE action = 'replay.halt-timed-out' AND subject_id = $1", [created.id])
    expect(audit).toHaveLength(1)
  })

  it('cancels a halted job at the operator\'s request: unpublished items back to dead', async () => {
    bug = 'all'
    const { rows } = await db.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM dead_letters d LEFT JOIN dead_letter_states st ON st.dead_letter_id = d.id WHERE coalesce(st.status, 'dead') = 'dead' AND d.group_id = $1::bigint", [groupId])
    expect(rows[0].n).toBeGreaterThan(10)
    const created = (await createReplay({
      db,
      control: composition().control, replayWork: composition().replayWork,
      input: { selection: { groupId }, confirmCount: rows[0].n, ratePerSecond: 500, staging: { canaryCount: 6, windowSeconds: 60, rampPercents: [100], haltPercent: 50, haltMinMessages: 5 } },
      actor: 'stage-test',
    })) as ReplayCreatedDto
    await waitForJob(db.sql, created.id, ['halted', 'completed', 'failed'], 40_000)
    const cancelled = await cancelReplay({ db, replayWork: composition().replayWork, id: created.id, actor: 'operator' })
    expect(cancelled.cancelRequested).toBe(true)
    const done = await waitForJob(db.sql, created.id, ['cancelled', 'completed', 'failed'], 30_000)
    expect(done).toMatchObject({ status: 'cancelled', confirmed: 6, cancelled: rows[0].n - 6 })
    expect((await getReplay({ db, id: created.id })).staging?.halt).toMatchObject({ outcome: 'cancelled', endedBy: 'operator' })
  })
})
