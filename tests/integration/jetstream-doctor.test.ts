import { AckPolicy, jetstream, JetStreamApiError, jetstreamManager, RetentionPolicy, type JetStreamClient, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as topologyRoute from '@/app/api/topology/route'
import * as runsRoute from '@/app/api/topology/runs/route'
import * as findingsRoute from '@/app/api/topology/findings/route'
import * as acknowledgeRoute from '@/app/api/topology/findings/[id]/acknowledge/route'
import * as messagesRoute from '@/app/api/messages/route'
import { startAckSampler, type AckSampler } from '@/lib/server/engines/topology-doctor/ack-sampler'
import { startTopologyDoctor } from '@/lib/server/engines/topology-doctor/topology-doctor-loop'
import { startJetStreamCapture } from '@/lib/server/engines/jetstream-capture/jetstream-capture'
import { logger } from '@/lib/server/platform/log'
import { OWN_STREAM_DESCRIPTION } from '@/lib/server/sources/advisory-keepers'
import type { ObservedAckTimes } from '@/lib/server/topology/jetstream/ack-times'
import { diagnoseJetStream } from '@/lib/server/topology/jetstream/diagnose-jetstream'
import { readJetStreamEvidence, readJetStreamSources } from '@/lib/server/topology/jetstream/jetstream-evidence'
import { readJetStreamSnapshot } from '@/lib/server/topology/jetstream/jetstream-snapshot'
import { runJetStreamCheck } from '@/lib/server/topology/jetstream/run-jetstream-check'
import type { FindingDto, TopologyDto } from '@/lib/shared/schemas/topology'
import { callRoute } from '../helpers/call-route'
import { waitFor } from '../helpers/broker'
import { createTestStream, NATS_URL, natsConnection, runFailingConsumer, uniqueNatsName, type TestStream } from '../helpers/nats'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { createTestVhost, testVhostName, type TestVhost } from '../helpers/topology-vhost'

/*
 * The topology doctor's JetStream findings against the real nats-server (docs/jetstream.md#the-doctors-jetstream-findings):
 * each trap is built with a real stream and consumer, read back through $JS.API, diagnosed, then fixed and found gone.
 * The server holds other tests' streams too, so each test looks at the findings about its own. Streams that keep every
 * stream's advisories (a capture's) would keep these tests' too: this file runs alone, and removes what it makes.
 */
const WATCHED = testVhostName('jetstream_doctor')
process.env.LAZARUS_TOPOLOGY_VHOSTS = WATCHED
process.env.LAZARUS_NATS_URL = NATS_URL
const OWN_ADVISORIES = uniqueNatsName('LZT_DOC_OWN')
process.env.LAZARUS_NATS_ADVISORY_STREAM = OWN_ADVISORIES
const CAPTURE_CONSUMER = 'lzt-doctor-capture'
process.env.LAZARUS_NATS_CONSUMER = CAPTURE_CONSUMER

const MS = 1e6
/** nats-server's error code for a stream whose subjects overlap another's. */
const SUBJECTS_OVERLAP = 10065
const HOUR_NS = 3_600_000 * MS
const MAX_DELIVERIES = '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES'
const TERMINATED = '$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED'
const settings = { LAZARUS_NATS_URL: [NATS_URL], LAZARUS_NATS_ADVISORY_STREAM: OWN_ADVISORIES, LAZARUS_NATS_CONSUMER: CAPTURE_CONSUMER }

type Diagnosis = ReturnType<typeof diagnoseJetStream>

describe('topology doctor: JetStream traps on the real nats-server', () => {
  let db: TestDb
  let nc: NatsConnection
  let jsm: JetStreamManager
  let js: JetStreamClient
  let vhost: TestVhost
  let made: TestStream[] = []

  /**
   * A stream of the test's own, removed after the test: `name.>` (lower case) unless `subjects` says otherwise. The
   * server refuses a stream on advisories while another one keeps them all (a capture's, of a test run elsewhere on
   * this machine): it is made once that one is gone.
   */
  const addStream = async (prefix: string, config: Partial<StreamConfig> = {}): Promise<TestStream> => {
    const name = uniqueNatsName(prefix)
    const subject = name.toLowerCase()
    await waitFor(
      () =>
        jsm.streams.add({ name, subjects: [`${subject}.>`], ...config }).then(
          () => true,
          (error: unknown) => {
            if (error instanceof JetStreamApiError && error.code === SUBJECTS_OVERLAP) return false
            throw error
          },
        ),
      { timeoutMs: 120_000, intervalMs: 500, what: `stream ${name}, once no other stream keeps its subjects` },
    )
    const stream = { name, subject, drop: async () => void (await jsm.streams.delete(name).catch(() => false)) }
    made.push(stream)
    return stream
  }
  const addConsumer = (stream: string, durable: string, config: { max_deliver?: number; backoff?: number[]; ack_wait?: number; sample_freq?: string } = {}) =>
    jsm.consumers.add(stream, { durable_name: durable, ack_policy: AckPolicy.Explicit, ...config })
  /**
   * The doctor on these streams as the server describes them. Other tests' streams on the server are left out of what
   * it reads, so that a stream keeping every stream's advisories, made by a test run elsewhere, cannot keep these too.
   */
  const diagnose = async (streams: string[], ackTimes: ObservedAckTimes[] | null = []): Promise<Diagnosis> => {
    const read = await readJetStreamSnapshot({ jsm, serverVersion: nc.info?.version ?? 'unknown' })
    const snapshot = { ...read, streams: read.streams.filter((s) => streams.includes(s.name)) }
    expect(snapshot.streams.map((s) => s.name).sort()).toEqual([...streams].sort())
    const sources = await readJetStreamSources({ sql: db.sql })
    return diagnoseJetStream({ snapshot, evidence: await readJetStreamEvidence({ sql: db.sql, sources }), sources, ackTimes, own: { advisoryStream: OWN_ADVISORIES, consumer: CAPTURE_CONSUMER } })
  }
  const kinds = (d: Diagnosis, kind?: string) => d.findings.filter((f) => !kind || f.kind === kind).map((f) => [f.kind, f.objects.map((o) => o.name)])
  const post = (path: string, body: unknown) =>
    new Request(`http://lazarus.test${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://lazarus.test' }, body: JSON.stringify(body) })

  beforeAll(async () => {
    db = await createTestDb()
    nc = await natsConnection()
    jsm = await jetstreamManager(nc)
    js = jetstream(nc)
    vhost = await createTestVhost('jetstream_doctor', WATCHED)
  })
  afterEach(async () => {
    for (const stream of made) await stream.drop()
    made = []
  })
  afterAll(async () => {
    await nc?.close()
    await vhost?.remove()
    await db?.drop()
  })

  it('finds a consumer without max_deliver that redelivers a poison message for ever, and not once it has one', async () => {
    const orders = await addStream('LZT_DOC_NOMAX')
    await addConsumer(orders.name, 'forever')
    await js.publish(`${orders.subject}.created`, 'poison')
    const consumer = await js.consumers.get(orders.name, 'forever')
    for (let i = 0; i < 3; i++) (await consumer.next({ expires: 5_000 }))?.nak()
    await waitFor(async () => (await jsm.consumers.info(orders.name, 'forever')).num_redelivered > 0, { what: 'the poison message redelivered' })

    const trapped = await diagnose([orders.name])
    expect(kinds(trapped)).toEqual([['no-max-deliver', [`${orders.name}/forever`]]])
    expect(trapped.findings[0]).toMatchObject({ severity: 'warning', key: `no-max-deliver|jetstream|consumer:${orders.name}/forever` })
    expect(trapped.findings[0].evidence).toEqual(expect.arrayContaining([{ label: 'max_deliver', value: '-1 (unlimited)' }, { label: 'redelivered now (num_redelivered)', value: '1' }]))
    expect(trapped.nodes.find((n) => n.id === `c:${orders.name}/forever`)).toMatchObject({ type: 'consumer', severity: 'warning', stats: { redelivered: 1 } })

    // The fix the finding names: max_deliver (with a backoff) on the consumer as it is. Its advisories are the next trap.
    await jsm.consumers.update(orders.name, 'forever', { max_deliver: 5, backoff: [1_000 * MS, 5_000 * MS] })
    expect(kinds(await diagnose([orders.name]))).toEqual([['advisories-not-captured', [`${orders.name}/forever`]]])
  })

  it('finds failure advisories no stream keeps, counting Lazarus\' own stream only where it covers them', async () => {
    const orders = await addStream('LZT_DOC_ADV')
    await addConsumer(orders.name, 'billing', { max_deliver: 3, backoff: [1_000 * MS, 5_000 * MS] })
    const billing = `${orders.name}/billing`
    const lost = await diagnose([orders.name])
    expect(kinds(lost)).toEqual([['advisories-not-captured', [billing]]])
    expect(lost.findings[0].severity).toBe('error')
    expect(lost.findings[0].evidence).toContainEqual({ label: 'max-deliveries advisories', value: `${MAX_DELIVERIES}.${orders.name}.billing: kept by no stream` })

    // Lazarus' own advisory stream, narrowed to another stream's advisories (as beside a team's stream): no help here.
    const other = uniqueNatsName('LZT_DOC_OTHER')
    const own = await addStream('LZT_DOC_OWN', { description: OWN_STREAM_DESCRIPTION, subjects: [`${MAX_DELIVERIES}.${other}.*`, `${TERMINATED}.${other}.*`] })
    expect((await diagnose([orders.name, own.name])).findings.map((f) => [f.kind, f.severity])).toEqual([['advisories-not-captured', 'error']])

    // A team's stream keeping the stream's max-deliveries advisories only: terminated failures are still lost.
    const team = await addStream('LZT_DOC_TEAM', { subjects: [`${MAX_DELIVERIES}.${orders.name}.*`], max_age: 14 * 24 * HOUR_NS })
    const half = await diagnose([orders.name, team.name])
    expect(half.findings.map((f) => [f.kind, f.severity])).toEqual([['advisories-not-captured', 'warning']])
    expect(half.findings[0].title).toBe(`No stream keeps the terminated advisories of consumer "${billing}"`)

    await jsm.streams.update(team.name, { subjects: [`${MAX_DELIVERIES}.${orders.name}.*`, `${TERMINATED}.${orders.name}.*`] })
    const kept = await diagnose([orders.name, team.name])
    expect(kept.findings).toEqual([])
    expect(kept.edges).toContainEqual({ id: `av:c:${billing}>s:${team.name}`, from: `c:${billing}`, to: `s:${team.name}`, kind: 'advisories', routingKey: 'max-deliveries, terminated' })
    expect(kept.nodes.find((n) => n.id === `s:${team.name}`)).toMatchObject({ type: 'stream', keepsAdvisories: true, lazarus: false })

    // What the doctor reads as kept is: a message that reaches max_deliver leaves its advisory in the team's stream.
    await js.publish(`${orders.subject}.created`, 'poison')
    const consumer = await js.consumers.get(orders.name, 'billing')
    // The server gives up when it would deliver a fourth time (after the backoff's steps), to a pull that waits.
    await waitFor(
      async () => {
        ;(await consumer.next({ expires: 1_000 }))?.nak()
        return (await jsm.streams.info(team.name)).state.messages === 1
      },
      { timeoutMs: 60_000, what: 'the max-deliveries advisory kept by the team\'s stream' },
    )
  })

  it('finds stream limits that remove failed messages and advisories within the triage window, and not once raised', async () => {
    const short = await addStream('LZT_DOC_SHORT', { max_age: HOUR_NS })
    const full = await addStream('LZT_DOC_FULL', { max_msgs: 10 })
    for (const s of [short, full]) await addConsumer(s.name, 'billing', { max_deliver: 3, backoff: [1_000 * MS, 5_000 * MS] })
    for (let i = 0; i < 10; i++) await js.publish(`${full.subject}.created`, `order ${i}`)
    const keeper = await addStream('LZT_DOC_KEEP', {
      subjects: [short.name, full.name].flatMap((s) => [`${MAX_DELIVERIES}.${s}.*`, `${TERMINATED}.${s}.*`]),
      max_age: HOUR_NS,
    })
    const all = [short.name, full.name, keeper.name]
    const trapped = await diagnose(all)
    expect(trapped.findings.map((f) => [f.kind, f.severity, f.objects.map((o) => o.name)]).sort()).toEqual(
      [
        ['stream-limits-drop-failures', 'error', [keeper.name]],
        ['stream-limits-drop-failures', 'warning', [full.name]],
        ['stream-limits-drop-failures', 'warning', [short.name]],
      ].sort(),
    )
    const about = (name: string) => trapped.findings.find((f) => f.objects[0].name === name)!
    expect(about(short.name).evidence[0]).toEqual({ label: 'max_age', value: '1h: messages are removed after that, under the 24h window' })
    expect(about(full.name).evidence[0]).toEqual({ label: 'max_msgs', value: expect.stringMatching(/^10 of 10 messages with discard old: the oldest message is .+ old, so a message lives about that long$/) })
    expect(about(keeper.name).title).toBe(`Advisory stream "${keeper.name}" drops failure advisories before they are captured (max_age)`)
    expect(trapped.checks.find((c) => c.kind === 'stream-limits-drop-failures')?.description).toContain('keep them 24h or more')

    await jsm.streams.update(short.name, { max_age: 7 * 24 * HOUR_NS })
    await jsm.streams.update(keeper.name, { max_age: 14 * 24 * HOUR_NS })
    await jsm.streams.update(full.name, { max_msgs: 100_000 })
    expect((await diagnose(all)).findings).toEqual([])
  })

  it('finds a handler whose sampled acks take about as long as ack_wait, and judges no consumer that samples nothing', async () => {
    const sampler: AckSampler = startAckSampler({ settings, log: logger('jetstream-doctor-test') })
    try {
      await sampler.ready()
      const jobs = await addStream('LZT_DOC_ACK')
      const ackWait = 4_000
      await addConsumer(jobs.name, 'slow', { ack_wait: ackWait * MS, sample_freq: '100%' })
      await addConsumer(jobs.name, 'unsampled', { ack_wait: ackWait * MS })
      await js.publish(`${jobs.subject}.run`, 'job')
      const delivered = await Promise.all(['slow', 'unsampled'].map(async (name) => (await js.consumers.get(jobs.name, name)).next({ expires: 5_000 })))
      // The behaviour under test: a handler that works for seven eighths of its ack wait on each message, then acks.
      await new Promise((resolve) => setTimeout(resolve, (ackWait * 7) / 8))
      for (const msg of delivered) expect(await msg!.ackAck()).toBe(true)
      await waitFor(async () => sampler.read().some((o) => o.stream === jobs.name && o.consumer === 'slow'), { what: 'the sampled ack' })

      const d = await diagnose([jobs.name], sampler.read())
      expect(kinds(d, 'ack-wait-too-short')).toEqual([['ack-wait-too-short', [`${jobs.name}/slow`]]])
      const finding = d.findings.find((f) => f.kind === 'ack-wait-too-short')!
      expect(finding.title).toMatch(new RegExp(`^Consumer "${jobs.name}/slow"'s handler takes about as long as its ack_wait of 4s \\(p95 3\\.\\ds\\)$`))
      expect(finding.evidence).toContainEqual({ label: 'sample_freq', value: '100%' })
      expect(d.nodes.find((n) => n.id === `c:${jobs.name}/slow`)).toMatchObject({ ackTimes: { samples: 1, onRedelivery: 0 } })
      expect(d.nodes.find((n) => n.id === `c:${jobs.name}/unsampled`)).toMatchObject({ ackTimes: null })
      expect(d.checks.find((c) => c.kind === 'ack-wait-too-short')?.description).toMatch(/consumers sample their acks \(sample_freq\), \d+ seen acking lately/)

      // Recorded; then a run in a process that samples nothing (Run now in a web process) keeps it open, unjudged.
      expect(await runJetStreamCheck({ sql: db.sql, settings, ackTimes: sampler.read })).toMatchObject({ ok: true })
      await runJetStreamCheck({ sql: db.sql, settings })
      const open = (await (await callRoute(findingsRoute, 'GET', new Request('http://lazarus.test/api/topology/findings?broker=jetstream'))).json()).findings as FindingDto[]
      expect(open.filter((f) => f.kind === 'ack-wait-too-short' && f.title.includes(jobs.name))).toHaveLength(1)
    } finally {
      await sampler.stop()
    }
  })

  it('finds a consumer retrying without backoff, and not once it has one', async () => {
    const orders = await addStream('LZT_DOC_BACKOFF')
    await addConsumer(orders.name, 'eager', { max_deliver: 4 })
    const trapped = await diagnose([orders.name])
    expect(kinds(trapped, 'no-backoff')).toEqual([['no-backoff', [`${orders.name}/eager`]]])
    expect(trapped.findings.find((f) => f.kind === 'no-backoff')?.evidence).toContainEqual({ label: 'all deliveries spent within', value: '1.5m on ack timeouts; at once on naks without delay' })
    await jsm.consumers.update(orders.name, 'eager', { backoff: [1_000 * MS, 10_000 * MS, 60_000 * MS] })
    expect(kinds(await diagnose([orders.name]), 'no-backoff')).toEqual([])
  })

  it('finds a work-queue consumer whose terminated messages were gone before the capture read them', async () => {
    // The capture's stream on every stream's advisories, made here as the capture makes it (and then finds it), so that
    // it waits for any other run's to go.
    const captureStream = (await addStream('LZT_DOC_CAPTURE', { description: OWN_STREAM_DESCRIPTION, subjects: [`${MAX_DELIVERIES}.>`, `${TERMINATED}.>`], max_age: 14 * 24 * HOUR_NS })).name
    const jobs = await createTestStream(jsm, { prefix: 'LZT_DOC_WORK', retention: RetentionPolicy.Workqueue })
    made.push(jobs)
    const sourceId = (
      await db.sql.query<{ id: string }>(`INSERT INTO sources (vhost, queue, kind, stream, consumer) VALUES ('', $1, 'jetstream', $2, NULL) RETURNING id::text`, [`${jobs.name}/*`, jobs.name])
    ).rows[0].id
    const capture = startJetStreamCapture({ db, settings: { ...settings, LAZARUS_NATS_ADVISORY_STREAM: captureStream, LAZARUS_NATS_ACK_WAIT_S: 1 }, log: logger('jetstream-doctor-test'), maxBodyBytes: 1024 * 1024, reconcileMs: 100 })
    try {
      await waitFor(async () => (await jsm.consumers.info(captureStream, CAPTURE_CONSUMER).catch(() => null)) !== null, { what: 'the capture consumer' })
      await runFailingConsumer(nc, { stream: jobs.name, consumer: 'worker', maxDeliver: 5, messages: [{ subject: `${jobs.subject}.run`, data: new TextEncoder().encode('{"job":1}') }], fails: () => 'term' })
      await waitFor(async () => (await db.sql.query(`SELECT 1 FROM dead_letters WHERE source_id = $1::bigint AND 'message-gone' = ANY(flags)`, [sourceId])).rows.length === 1, { what: 'the terminated record, message gone' })

      const d = await diagnose([jobs.name, captureStream])
      expect(kinds(d, 'terminated-message-gone')).toEqual([['terminated-message-gone', [`${jobs.name}/worker`, jobs.name]]])
      const finding = d.findings.find((f) => f.kind === 'terminated-message-gone')!
      expect(finding.title).toBe(`Consumer "${jobs.name}/worker" terminates messages its work-queue stream removes at once: 1 stored without content`)
      expect(finding.evidence).toContainEqual({ label: 'Lazarus source', value: `source ${sourceId}` })
      // Its stored messages are a click away: the query lists the record.
      const listed = (await (await callRoute(messagesRoute, 'GET', new Request(`http://lazarus.test/api/messages?${finding.messagesQuery}`))).json()).messages as unknown[]
      expect(listed).toHaveLength(1)
      // The capture's own stream keeps the consumer's advisories: the graph says which stream keeps whose.
      expect(d.edges).toContainEqual(expect.objectContaining({ from: `c:${jobs.name}/worker`, to: `s:${captureStream}`, kind: 'advisories' }))
    } finally {
      await capture.stop()
      await db.sql.query('UPDATE sources SET enabled = false WHERE id = $1::bigint', [sourceId])
    }
  })

  it('shows the findings beside the vhost\'s on the page\'s API, acknowledged like any, and keeps them while NATS is down', async () => {
    const orders = await addStream('LZT_DOC_API')
    await addConsumer(orders.name, 'forever')
    const run = await callRoute(runsRoute, 'POST', post('/api/topology/runs', {}))
    expect(run.status).toBe(200)
    const dto = (await run.json()) as TopologyDto
    expect(dto).toMatchObject({ vhost: WATCHED, jetstream: { configured: true, serverVersion: nc.info?.version, error: null } })
    expect(dto.jetstream.checkedAt).not.toBeNull()
    expect(dto.nodes.find((n) => n.id === `s:${orders.name}`)).toMatchObject({ type: 'stream', retention: 'limits', severity: null })
    expect(dto.edges).toContainEqual({ id: `cs:c:${orders.name}/forever`, from: `s:${orders.name}`, to: `c:${orders.name}/forever`, kind: 'consumes', routingKey: null })
    const finding = dto.findings.find((f) => f.kind === 'no-max-deliver' && f.objects[0].name === `${orders.name}/forever`)!
    expect(finding).toMatchObject({ severity: 'warning', vhost: '', acknowledged: null, resolvedAt: null })
    expect(dto.checks.map((c) => c.kind)).toEqual(expect.arrayContaining(['dlx-missing', 'no-max-deliver', 'ack-wait-too-short']))

    const ack = await callRoute(acknowledgeRoute, 'POST', post(`/api/topology/findings/${finding.id}/acknowledge`, { reason: 'a replayer that retries for ever on purpose' }), { id: finding.id })
    expect(ack.status).toBe(200)
    expect((await ack.json()).acknowledged).toMatchObject({ reason: 'a replayer that retries for ever on purpose' })

    // The server unreachable: the run says so, and the last good graph and findings stay.
    const down = await runJetStreamCheck({ sql: db.sql, settings: { ...settings, LAZARUS_NATS_URL: ['nats://127.0.0.1:1'] } })
    expect(down).toEqual({ ok: false, error: 'Could not read JetStream from the NATS server (LAZARUS_NATS_URL): connection refused' })
    const page = (await (await callRoute(topologyRoute, 'GET', new Request('http://lazarus.test/api/topology'))).json()) as TopologyDto
    expect(page.jetstream.error).toBe(down.ok ? null : down.error)
    expect(page.findings.find((f) => f.id === finding.id)).toMatchObject({ acknowledged: { reason: 'a replayer that retries for ever on purpose' } })
    expect(page.nodes.some((n) => n.id === `c:${orders.name}/forever`)).toBe(true)

    // The consumer gone: the next run resolves its finding.
    await jsm.consumers.delete(orders.name, 'forever')
    await runJetStreamCheck({ sql: db.sql, settings })
    const all = (await (await callRoute(findingsRoute, 'GET', new Request('http://lazarus.test/api/topology/findings?broker=jetstream&state=all'))).json()).findings as FindingDto[]
    expect(all.find((f) => f.id === finding.id)?.resolvedAt).not.toBeNull()
  })

  it('reads the NATS server on the doctor\'s schedule, after the vhosts', async () => {
    const orders = await addStream('LZT_DOC_SCHEDULE')
    await addConsumer(orders.name, 'forever')
    const doctor = startTopologyDoctor({ db, log: logger('jetstream-doctor-test'), everyMs: 1_000, jetstream: { settings, ackTimes: () => [] } })
    try {
      const found = await waitFor(
        async () => {
          const listed = (await (await callRoute(findingsRoute, 'GET', new Request('http://lazarus.test/api/topology/findings?broker=jetstream'))).json()).findings as FindingDto[]
          return listed.find((f) => f.kind === 'no-max-deliver' && f.objects[0].name === `${orders.name}/forever`)
        },
        { timeoutMs: 30_000, what: 'the scheduled run\'s finding' },
      )
      expect(found).toMatchObject({ vhost: '', severity: 'warning' })
    } finally {
      await doctor.stop()
    }
  })
})
