import { randomBytes, randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as guardSuperseded from '@/app/api/guard/superseded/route'
import * as pausesRoute from '@/app/api/pauses/route'
import { createGuard, GUARD_VERSION, HELD_HEADER_PREFIX, REPLAY_ID_HEADER, type Guard } from '@/packages/guard/src'
import { pollRequest } from '@/packages/guard/src/poll-request'
import { createPause } from '@/lib/server/pauses/create-pause'
import { composition } from '@/lib/server/platform/process/composition'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import type { ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { createTestUser } from '../helpers/auth'
import { uniqueName, waitFor } from '../helpers/broker'
import { asText, fill, protocolFixture, protocolFolder, protocolVersions, type Fixture } from '../helpers/guard-fixtures'
import { isolatePauseTopology } from '../helpers/pause-topology'
import { bulkRows, freezeJob, storeBulk } from '../helpers/replay'

const topology = isolatePauseTopology()
const RULE = { kind: 'jsonPointer', pointer: '/orderId' } as const
const CURRENT = protocolFolder(GUARD_VERSION)

type HttpRecord = { method: string; path: string; query?: Record<string, unknown>; headers: Record<string, unknown>; body?: unknown }
type PollFixture = { exchanges: { request: HttpRecord; response: unknown; heartbeat: unknown }[] }
type AmqpRecord = { routingKey: string; properties: Record<string, unknown>; content: unknown }
type HoldFixture = { published: AmqpRecord; stored: unknown }
type ReportFixture = { request: HttpRecord; response: unknown }

/**
 * A delivery as the fixtures record it: its routing key, the properties it has (amqplib lists absent ones too, and an
 * empty header table is none), its JSON.
 */
const asRecorded = (message: ConsumeMessage): AmqpRecord => ({
  routingKey: message.fields.routingKey,
  properties: Object.fromEntries(
    Object.entries(message.properties).filter(([name, value]) => value !== undefined && !(name === 'headers' && Object.keys(value as object).length === 0)),
  ),
  content: JSON.parse(message.content.toString()),
})

/** The fixture files the versions use, each once, with the versions that use it. */
function fixtureUses<T>(name: string): { fixture: Fixture<T>; versions: string[] }[] {
  const uses = new Map<string, { fixture: Fixture<T>; versions: string[] }>()
  for (const version of protocolVersions()) {
    const fixture = protocolFixture<T>(version, name)
    if (!fixture) continue
    const use = uses.get(fixture.file) ?? { fixture, versions: [] }
    use.versions.push(version)
    uses.set(fixture.file, use)
  }
  return [...uses.values()]
}

/**
 * The protocol between guards and Lazarus (docs/ARCHITECTURE.md#pause-hold-release, "The guard package"), pinned by
 * the fixtures in tests/fixtures/guard-protocol: the current guard sends what its version's fixtures record, and
 * Lazarus answers every version's fixtures as recorded (a guard before 2.0, with a refusal that says why). A change to
 * either side that breaks a recorded exchange fails here; a guard that sends something new needs a new minor version
 * and its own fixtures.
 */
describe('guard protocol: the fixtures of every guard version, against the real routes, broker and database', () => {
  let lazarus: Awaited<ReturnType<typeof topology.startLazarus>>
  const queues: string[] = []
  const guards: Guard[] = []

  beforeAll(async () => {
    // Its drainer stores what reaches the hold queue as held rows.
    lazarus = await topology.startLazarus({ dlq: uniqueName('proto_dlq'), entityKey: RULE, routes: { '/api/pauses': pausesRoute, '/api/guard/superseded': guardSuperseded } })
  })

  afterAll(async () => {
    for (const guard of guards) await guard.close().catch(() => {})
    await lazarus?.stop(queues)
  })

  /** What every fixture starts from: a guard's queue, a guard token for it, and a pause of order-42 on it. */
  async function pausedQueue(prefix: string) {
    const queue = uniqueName(prefix)
    const setup = await lazarus.app.createChannel()
    await setup.assertQueue(queue, { durable: false })
    await setup.close()
    queues.push(queue)
    const user = await createTestUser(lazarus.db, `guard-${randomBytes(4).toString('hex')}`, [{ role: 'operator' }], { scope: 'guard', guardQueue: queue })
    const pause = await createPause({ db: lazarus.db, control: composition().control, input: { sourceId: lazarus.sourceId, queue, entityKey: 'order-42', reason: 'guard protocol contract' }, actor: 'ann@lazarus.test', allowAnyQueue: true })
    const { version: registryVersion } = await listPauses({ db: lazarus.db, status: 'active' })
    const values = { queue, token: user.token, pauseId: pause.id, sourceId: lazarus.sourceId, actor: pause.createdBy, pauseVersion: pause.version, registryVersion }
    return { queue, token: user.token, values }
  }

  async function heartbeat(queue: string, instance: string) {
    const { rows } = await lazarus.db.sql.query<{ guardVersion: string; registryVersion: number | null }>(
      `SELECT guard_version AS "guardVersion", registry_version::float8 AS "registryVersion" FROM guard_heartbeats WHERE queue = $1 AND instance = $2`,
      [queue, instance],
    )
    return rows[0] ?? null
  }

  async function heldRow(queue: string) {
    const rows = await waitFor(async () => {
      const { rows } = await lazarus.db.sql.query(
        `SELECT st.status, d.held_from AS "heldFrom", d.entity_key AS "entityKey", d.flags, d.properties, d.headers, convert_from(d.body, 'UTF8')::jsonb AS content
         FROM dead_letters d JOIN message_statuses st ON st.dead_letter_id = d.id WHERE d.held_from = $1`,
        [queue],
      )
      return rows.length > 0 && rows
    }, { what: `a held row from ${queue}` })
    expect(rows).toHaveLength(1)
    return rows[0]
  }

  /** A replay job's item that published an older version of order-7 to `queue`: what a superseded report names. */
  async function replayedItem(queue: string) {
    const rows = bulkRows(1, { originExchange: '', originKey: queue, originQueue: queue, entity: () => 'order-7' })
    await storeBulk(lazarus.db.sql, uniqueName('proto_replayed'), rows)
    const { rows: stored } = await lazarus.db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE fingerprint = $1`, [rows[0].fingerprint])
    const jobId = await freezeJob({ sql: lazarus.db.sql, kind: 'replay', ids: [stored[0].id], actor: 'ann@lazarus.test' })
    const { rows: items } = await lazarus.db.sql.query<{ replay_id: string }>(`SELECT replay_id FROM replay_items WHERE job_id = $1`, [jobId])
    return { jobId, replayId: items[0].replay_id }
  }

  async function send(request: HttpRecord) {
    const query = request.query && Object.keys(request.query).length > 0 ? `?${new URLSearchParams(asText(request.query))}` : ''
    const response = await fetch(`${lazarus.server.url}${request.path}${query}`, {
      method: request.method,
      headers: asText(request.headers),
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    })
    return { status: response.status, body: await response.json() }
  }

  async function publishToHold(message: AmqpRecord) {
    const channel = await lazarus.app.createConfirmChannel()
    channel.publish(topology.hold, message.routingKey, Buffer.from(JSON.stringify(message.content)), { ...message.properties, mandatory: true })
    await channel.waitForConfirms()
    await channel.close()
  }

  it(`has fixtures for the current guard (${GUARD_VERSION}: ${CURRENT}), and every version has its poll`, () => {
    expect(protocolVersions(), `record tests/fixtures/guard-protocol/${CURRENT}/ for guard ${GUARD_VERSION}`).toContain(CURRENT)
    expect(protocolVersions()[0]).toBe('1.x')
    for (const version of protocolVersions()) expect(protocolFixture(version, 'poll.json'), version).not.toBeNull()
  })

  for (const version of protocolVersions()) {
    it(`answers the polls of guard ${version} as recorded`, async () => {
      // Each version's polls are its own: a guard's version is part of its poll.
      const fixture = protocolFixture<PollFixture>(version, 'poll.json')!
      expect(fixture.version).toBe(version)
      const bed = await pausedQueue('proto_poll')
      const values = { ...bed.values, instance: `contract-${version}-${randomBytes(4).toString('hex')}` }
      for (const exchange of fixture.value.exchanges) {
        const request = fill(exchange.request, values) as HttpRecord
        expect(await send(request), `${fixture.file}: ${request.method} ${request.path} ${JSON.stringify(request.query)}`).toEqual(fill(exchange.response, values))
        expect(await heartbeat(bed.queue, values.instance)).toEqual(fill(exchange.heartbeat, values))
      }
    })
  }

  for (const { fixture, versions } of fixtureUses<AmqpRecord>('control-event.json')) {
    it(`publishes control events as recorded (${fixture.file}, guards ${versions.join(', ')})`, async () => {
      const channel = await lazarus.app.createChannel()
      const { queue: events } = await channel.assertQueue('', { exclusive: true })
      await channel.bindQueue(events, topology.control, '#')
      const received: ConsumeMessage[] = []
      await channel.consume(events, (message) => message && received.push(message), { noAck: true })
      const bed = await pausedQueue('proto_events')
      const event = await waitFor(async () => received.find((m) => JSON.parse(m.content.toString()).pause?.queue === bed.queue), { what: 'the pause event' })
      await channel.close()
      const { about: _about, ...recorded } = fixture.value as AmqpRecord & { about: string }
      expect(asRecorded(event)).toEqual(fill(recorded, bed.values))
    })
  }

  for (const { fixture, versions } of fixtureUses<HoldFixture>('hold.json')) {
    it(`stores held messages as recorded (${fixture.file}, guards ${versions.join(', ')})`, async () => {
      const bed = await pausedQueue('proto_hold')
      const values = { ...bed.values, heldId: randomUUID() }
      await publishToHold(fill(fixture.value.published, values) as AmqpRecord)
      expect(await heldRow(bed.queue)).toEqual(fill(fixture.value.stored, values))
    })
  }

  for (const { fixture, versions } of fixtureUses<ReportFixture>('superseded.json')) {
    it(`records superseded reports as recorded (${fixture.file}, guards ${versions.join(', ')})`, async () => {
      const bed = await pausedQueue('proto_report')
      const values = { ...bed.values, instance: `contract-${randomBytes(4).toString('hex')}`, ...(await replayedItem(bed.queue)) }
      expect(await send(fill(fixture.value.request, values) as HttpRecord)).toEqual(fill(fixture.value.response, values))
    })
  }

  it(`the current guard (${GUARD_VERSION}) polls, holds and reports as ${CURRENT}'s fixtures record`, async () => {
    const poll = protocolFixture<PollFixture>(CURRENT, 'poll.json')!.value
    const hold = protocolFixture<HoldFixture>(CURRENT, 'hold.json')!.value
    const report = protocolFixture<ReportFixture>(CURRENT, 'superseded.json')!.value
    const bed = await pausedQueue('proto_live')
    const replayed = await replayedItem(bed.queue)
    // A second queue on the fanout hold exchange sees each held copy as the broker routed it.
    const capture = await lazarus.app.createChannel()
    const { queue: copies } = await capture.assertQueue('', { exclusive: true })
    await capture.bindQueue(copies, topology.hold, '')
    const heldCopies: ConsumeMessage[] = []
    await capture.consume(copies, (message) => message && heldCopies.push(message), { noAck: true })

    const channel = await lazarus.app.createChannel()
    const handled: unknown[] = []
    const guard = createGuard({
      ...topology.guardOptions, connection: lazarus.app, queue: bed.queue, lazarusUrl: lazarus.server.url, token: bed.token, pollIntervalMs: 60_000, retryDelayMs: 100,
      versions: { rule: { kind: 'jsonPointer', pointer: '/version', type: 'number' }, entityKey: RULE },
    })
    guards.push(guard)
    await guard.consume(channel, (message) => {
      if (!message) return
      handled.push(JSON.parse(message.content.toString()))
      channel.ack(message)
    })
    const values = { ...bed.values, instance: guard.instanceId, ...replayed, heldId: fill('{{any-uuid}}', {}) }

    // Polls: the first without a registry version, then (having read one) with it; headers exactly as recorded.
    const polls = await waitFor(async () => {
      const mine = lazarus.server.exchanges.filter((e) => e.path === '/api/pauses' && e.query.instance === guard.instanceId)
      return mine.length >= poll.exchanges.length && mine
    }, { what: "the guard's polls" })
    poll.exchanges.forEach((recorded, i) => {
      const request = fill(recorded.request, values) as HttpRecord
      const headers = asText(request.headers)
      expect(polls[i].query).toEqual(asText(request.query))
      expect(Object.fromEntries(Object.keys(headers).map((name) => [name, polls[i].headers[name]]))).toEqual(headers)
      expect({ status: polls[i].status, body: polls[i].answer }).toEqual(fill(recorded.response, values))
    })
    const firstRequest = fill(poll.exchanges[0].request, values) as HttpRecord
    expect(pollRequest({ baseUrl: lazarus.server.url, queue: bed.queue, vhost: '/', instanceId: guard.instanceId, token: bed.token }).headers).toEqual(asText(firstRequest.headers))
    await waitFor(async () => (await heartbeat(bed.queue, guard.instanceId))?.registryVersion !== null, { what: 'the heartbeat with the registry version held' })
    expect(await heartbeat(bed.queue, guard.instanceId)).toEqual(fill(poll.exchanges.at(-1)!.heartbeat, values))

    // Holds: the application's message (the recorded one without the guard's headers) is held as recorded.
    const published = fill(hold.published, values) as AmqpRecord
    const { headers, ...properties } = published.properties as { headers: Record<string, unknown> }
    const ownHeaders = Object.fromEntries(Object.entries(headers).filter(([name]) => !name.startsWith(HELD_HEADER_PREFIX)))
    const sender = await lazarus.app.createConfirmChannel()
    sender.sendToQueue(bed.queue, Buffer.from(JSON.stringify(published.content)), { ...properties, headers: ownHeaders })
    await sender.waitForConfirms()
    const [copy] = await waitFor(async () => heldCopies.length > 0 && heldCopies, { what: 'the held copy' })
    expect(asRecorded(copy)).toEqual(published)
    expect(await heldRow(bed.queue)).toEqual(fill(hold.stored, values))

    // Reports: version 5 of order-7 reaches the handler; a replayed version 4 is dropped and reported as recorded.
    sender.sendToQueue(bed.queue, Buffer.from(JSON.stringify({ orderId: 'order-7', version: 5 })), { contentType: 'application/json' })
    await sender.waitForConfirms()
    await waitFor(async () => handled.length === 1, { what: 'version 5 handled' })
    sender.sendToQueue(bed.queue, Buffer.from(JSON.stringify({ orderId: 'order-7', version: 4 })), { contentType: 'application/json', headers: { [REPLAY_ID_HEADER]: replayed.replayId } })
    await sender.waitForConfirms()
    await sender.close()
    const sent = await waitFor(async () => lazarus.server.exchanges.find((e) => e.path === '/api/guard/superseded' && (e.body as { instance?: string }).instance === guard.instanceId), { what: 'the report' })
    const request = fill(report.request, values) as HttpRecord
    const reportHeaders = asText(request.headers)
    expect(sent.body).toEqual(request.body)
    expect(Object.fromEntries(Object.keys(reportHeaders).map((name) => [name, sent.headers[name]]))).toEqual(reportHeaders)
    expect({ status: sent.status, body: sent.answer }).toEqual(fill(report.response, values))
    expect(handled).toEqual([{ orderId: 'order-7', version: 5 }])
    await capture.close()
  })
})
