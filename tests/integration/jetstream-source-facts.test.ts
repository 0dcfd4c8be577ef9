import { RetentionPolicy } from '@nats-io/jetstream'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as jetstreamFactsRoute from '@/app/api/sources/jetstream/route'
import { advisorySubjects } from '@/lib/server/engines/jetstream-capture/advisory'
import { getConfig } from '@/lib/server/platform/config'
import { getJetStreamSourceFacts } from '@/lib/server/sources/jetstream-source-facts'
import { waitFor } from '../helpers/broker'
import { callRoute } from '../helpers/call-route'
import { openJetStreamBed, type JetStreamBed } from '../helpers/jetstream-bed'
import { createTestStream, NATS_URL, runFailingConsumer, uniqueNatsName, type TestStream } from '../helpers/nats'

/**
 * The sources page's JetStream facts (docs/jetstream.md#the-source-page), asked of the real nats-server: which stream
 * keeps a source's advisories and how the capture reads it (Lazarus' own stream on every stream's advisories, narrowed
 * beside a team's stream, or the team's stream itself), how many advisories wait for the capture consumer, and the
 * source stream's retention; NATS unset or unreachable is an answer, not an error. The tests run in order: the last
 * removes the advisory stream the first made, so that a team's stream can keep advisories (one stream per subject).
 */
const CONSUMER = 'lzt-facts'

describe('JetStream source facts', () => {
  let bed: JetStreamBed
  const config = () => ({ ...getConfig(), LAZARUS_NATS_URL: [NATS_URL], LAZARUS_NATS_ADVISORY_STREAM: bed.advisoryStream, LAZARUS_NATS_CONSUMER: CONSUMER })
  const factsOf = async (sourceId: string) => (await getJetStreamSourceFacts({ db: bed.db, config: config() })).sources.find((s) => s.sourceId === sourceId)
  const fail = (stream: TestStream, count: number) =>
    runFailingConsumer(bed.nc, { stream: stream.name, consumer: 'worker', maxDeliver: 1, fails: () => 'nak', messages: Array.from({ length: count }, (_, i) => ({ subject: `${stream.subject}.x`, data: new TextEncoder().encode(`{"n":${i}}`) })) })

  beforeAll(async () => {
    bed = await openJetStreamBed()
  })

  afterEach(async () => bed.stopCaptures())

  afterAll(async () => bed?.close())

  it('says where the advisories are kept, how many wait for capture and what each stream\'s retention keeps', async () => {
    const { db, jsm, streams, advisoryStream, addSource, startCapture } = bed
    const limits = await createTestStream(jsm, { prefix: 'LZT_FACTS' })
    const workQueue = await createTestStream(jsm, { prefix: 'LZT_FACTS_WQ', retention: RetentionPolicy.Workqueue })
    const interest = await createTestStream(jsm, { prefix: 'LZT_FACTS_IN', retention: RetentionPolicy.Interest })
    streams.push(limits, workQueue, interest)
    const limitsSource = await addSource(limits.name, null)
    const workSource = await addSource(workQueue.name, null)
    const interestSource = await addSource(interest.name, 'worker')
    const rabbit = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('facts.dlq') RETURNING id::text`)).rows[0].id

    // Before any capture ran, nothing keeps the advisories: the page says so rather than failing.
    expect(await factsOf(limitsSource)).toEqual({
      sourceId: limitsSource, stream: limits.name, retention: 'limits', pending: null, problem: null,
      capture: { mode: 'none', problem: `no stream keeps its advisories yet: a running capture (a worker with LAZARUS_NATS_URL) makes ${advisoryStream}` },
    })

    const capture = await startCapture(CONSUMER, [advisoryStream])
    await capture.stop()
    // With the capture stopped, the failures wait in the advisory stream for its consumer.
    await fail(limits, 3)
    await fail(workQueue, 2)
    await waitFor(async () => (await jsm.consumers.info(advisoryStream, CONSUMER)).num_pending === 5, { what: 'five advisories waiting' })

    const facts = await getJetStreamSourceFacts({ db, config: config() })
    expect(facts).toMatchObject({ consumer: CONSUMER, natsError: null })
    // Only JetStream sources have facts; the RabbitMQ one is not among them.
    expect(facts.sources.map((s) => s.sourceId).sort()).toEqual([limitsSource, workSource, interestSource].sort())
    expect(facts.sources.find((s) => s.sourceId === rabbit)).toBeUndefined()
    const own = { mode: 'own-wide', advisoryStream: advisoryStream }
    expect(await factsOf(limitsSource)).toEqual({ sourceId: limitsSource, stream: limits.name, retention: 'limits', capture: own, pending: { waiting: 5, unacked: 0 }, problem: null })
    expect(await factsOf(workSource)).toMatchObject({ retention: 'workqueue', capture: own, pending: { waiting: 5, unacked: 0 } })
    expect(await factsOf(interestSource)).toMatchObject({ retention: 'interest', capture: own })

    // Captured: nothing waits any more.
    await startCapture(CONSUMER, [advisoryStream])
    await waitFor(async () => {
      const pending = (await factsOf(limitsSource))?.pending
      return pending?.waiting === 0 && pending.unacked === 0
    }, { what: 'the advisories captured and acknowledged' })

    // A source stream that is gone is said on its own facts; the others are unaffected.
    await interest.drop()
    expect(await factsOf(interestSource)).toMatchObject({ retention: null, capture: own, problem: `stream ${interest.name} no longer exists on the NATS server` })
    expect(await factsOf(limitsSource)).toMatchObject({ retention: 'limits', problem: null })
  })

  it('is an answer, not a failure, when NATS is not set or cannot be reached', async () => {
    const { db } = bed
    const unreachable = await getJetStreamSourceFacts({ db, config: { ...config(), LAZARUS_NATS_URL: ['nats://lazarus:s3cret@127.0.0.1:1'] }, timeoutMs: 1_000 })
    expect(unreachable).toMatchObject({ sources: [], natsError: expect.stringMatching(/^cannot reach NATS at 127\.0\.0\.1:1: /) })
    expect(unreachable.natsError).not.toContain('s3cret')
    // Over HTTP, as the page asks: this process has no LAZARUS_NATS_URL.
    expect(getConfig().LAZARUS_NATS_URL).toBeUndefined()
    const response = await callRoute(jetstreamFactsRoute, 'GET', new Request('http://lazarus.test/api/sources/jetstream'))
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ sources: [], natsError: expect.stringContaining('LAZARUS_NATS_URL is not set') })
  })

  it('names a team\'s own advisory stream, and Lazarus\' stream narrowed to the other streams beside it', async () => {
    const { db, jsm, streams, advisoryStream, addSource, startCapture, stored } = bed
    // A team's stream can only keep advisories once no other stream keeps them all: remove the first test's.
    await jsm.streams.delete(advisoryStream)
    await db.sql.query(`UPDATE sources SET enabled = false WHERE kind = 'jetstream'`)
    const teams = await createTestStream(jsm, { prefix: 'LZT_FACTS_TEAM' })
    const ours = await createTestStream(jsm, { prefix: 'LZT_FACTS_OURS' })
    streams.push(teams, ours)
    const teamStream = uniqueNatsName('LZT_TEAM_FAILURES')
    await jsm.streams.add({ name: teamStream, subjects: advisorySubjects(teams.name), description: 'the team\'s own failure stream' })
    streams.push({ name: teamStream, subject: '', drop: async () => void (await jsm.streams.delete(teamStream).catch(() => false)) })
    const teamSource = await addSource(teams.name, null)
    const ourSource = await addSource(ours.name, null)

    await startCapture(CONSUMER, [teamStream, advisoryStream])
    await fail(teams, 2)
    await waitFor(async () => (await stored(teamSource)) === 2, { what: 'the team stream\'s failures captured' })
    expect(await factsOf(teamSource)).toEqual({ sourceId: teamSource, stream: teams.name, retention: 'limits', capture: { mode: 'team', advisoryStream: teamStream }, pending: { waiting: 0, unacked: 0 }, problem: null })
    expect(await factsOf(ourSource)).toMatchObject({ capture: { mode: 'own-narrow', advisoryStream }, pending: { waiting: 0, unacked: 0 } })
  })
})
