import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { ChannelModel } from '@/lib/server/platform/broker/amqplib'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import { createGuard, GUARD_VERSION, type Guard, type GuardOptions } from '@/packages/guard/src'
import guardPackage from '@/packages/guard/package.json'
import { createPause } from '@/lib/server/pauses/create-pause'
import { recordGuardHeartbeat } from '@/lib/server/pauses/guard-heartbeat'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { resumePause } from '@/lib/server/pauses/resume-pause'
import type { PauseRuntime } from '@/lib/server/engines/release/pause-runtime'
import { queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { managementJson } from '../helpers/management'
import { drainQueues } from '../helpers/drainer'
import { servePausesApi, type PollRequest } from '../helpers/pause-api-server'
import { isolatePauseTopology } from '../helpers/pause-topology'
import type { TestDb } from '../helpers/test-db'
import { closeComposition, composition } from '@/lib/server/platform/process/composition'

const topology = isolatePauseTopology()

type Handled = { orderId: string; n: number }
const RULE = { kind: 'jsonPointer', pointer: '/orderId' } as const

/**
 * The control exchange and the guard's poll as attack surfaces: a real guard consuming a real queue, events forged
 * by "another application" on the same broker, and a Lazarus that requires (or refuses) a guard token.
 */
describe('guard security: events only trigger a re-read; the list decides; tokens and heartbeats', () => {
  let db: TestDb
  let runtime: PauseRuntime
  let drainer: Drainer
  let api: Awaited<ReturnType<typeof servePausesApi>>
  let app: ChannelModel
  let sourceId: string
  const dlq = uniqueName('sec_dlq')
  const queues: string[] = []
  const guards: Guard[] = []
  /** Queues whose polls the test Lazarus refuses, with the one token it would accept (null: none). */
  const refusals = new Map<string, { status: number; accept: string | null }>()

  function gate(poll: PollRequest): number | null {
    const refusal = refusals.get(poll.url.searchParams.get('queue') ?? '')
    if (!refusal) return null
    return refusal.accept !== null && poll.headers.authorization === `Bearer ${refusal.accept}` ? null : refusal.status
  }

  async function newQueue(prefix: string): Promise<string> {
    const queue = uniqueName(prefix)
    const ch = await app.createChannel()
    await ch.assertQueue(queue, { durable: false })
    await ch.close()
    queues.push(queue)
    return queue
  }

  /** An application consumer built on the guard: records what its handler saw, acks it. */
  async function startConsumer(queue: string, options: Partial<GuardOptions> = {}) {
    const channel = await app.createChannel()
    await channel.prefetch(20)
    const handled: Handled[] = []
    const errors: string[] = []
    const guard = createGuard({
      ...topology.guardOptions, connection: app, queue, lazarusUrl: api.url, pollIntervalMs: 60_000, retryDelayMs: 100,
      onError: (e) => errors.push(e.message), ...options,
    })
    guards.push(guard)
    const consumer = await guard.consume(channel, (message) => {
      if (!message) return
      handled.push(JSON.parse(message.content.toString()))
      channel.ack(message)
    })
    return { guard, channel, consumer, handled, errors }
  }

  async function publish(queue: string, messages: Handled[]) {
    const channel = await app.createConfirmChannel()
    for (const body of messages) channel.sendToQueue(queue, Buffer.from(JSON.stringify(body)), { contentType: 'application/json' })
    await channel.waitForConfirms()
    await channel.close()
  }

  /** What any application on the broker can do: publish whatever it likes to lazarus.control. */
  async function forge(events: unknown[]) {
    const channel = await app.createConfirmChannel()
    for (const event of events) {
      const content = typeof event === 'string' ? Buffer.from(event) : Buffer.from(JSON.stringify(event))
      channel.publish(topology.control, (event as { type?: string }).type ?? 'pause', content, { contentType: 'application/json' })
    }
    await channel.waitForConfirms()
    await channel.close()
  }

  /**
   * Events still waiting in the guards' event queues: the exclusive queues bound to the control exchange, which belong
   * to the test's own connection (the guards share it), so the test may check them.
   */
  async function controlEventsBacklog(): Promise<number> {
    const bindings = await managementJson<{ destination: string; destination_type: string }[]>(
      `/api/exchanges/%2F/${encodeURIComponent(topology.control)}/bindings/source`,
    )
    const channel = await app.createChannel()
    try {
      let waiting = 0
      for (const b of bindings.filter((b) => b.destination_type === 'queue')) waiting += (await channel.checkQueue(b.destination)).messageCount
      return waiting
    } catch {
      // A guard's queue went away between the two reads: ask again.
      return -1
    } finally {
      await channel.close().catch(() => {})
    }
  }

  const forgedPause = (queue: string, version: number, entityKey: string | null) => ({
    type: 'pause',
    version,
    pause: {
      id: String(version), sourceId, vhost: '/', queue, entityKey, entityKeyRule: entityKey === null ? null : RULE, status: 'active',
      reason: 'forged', createdBy: 'mallory', createdAt: new Date().toISOString(), replayJobId: null, held: 0, resumedAt: null, resumedBy: null, version,
    },
  })

  async function heldCount(queue: string): Promise<number> {
    const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM dead_letters WHERE held_from = $1`, [queue])
    return rows[0].n
  }

  beforeAll(async () => {
    ;({ db, runtime, app } = await topology.startTestbed([dlq]))
    // The drainer stores what guards hold (lazarus.hold is registered by the runtime).
    const drain = await drainQueues(db, [dlq], { entityKey: RULE })
    drainer = drain.drainer
    sourceId = drain.sourceIds[dlq]
    api = await servePausesApi({ db, gate })
  })

  afterAll(async () => {
    vi.restoreAllMocks()
    for (const guard of guards) await guard.close().catch(() => {})
    await drainer?.stop()
    await runtime?.stop()
    await api?.close()
    if (app) {
      const ch = await app.createChannel()
      for (const q of [dlq, ...queues]) await ch.deleteQueue(q).catch(() => {})
      await app.close().catch(() => {})
    }
    await closeComposition()
    await topology.cleanup()
    await db?.drop()
  })

  it('forged events (a huge version, an entity pause, a whole-queue pause, garbage) change nothing: the guard re-reads the list and follows it', async () => {
    const work = await newQueue('sec_work')
    const c = await startConsumer(work)
    // Past the reads of its start (the first list, then one after subscribing to events): an event it hears proves it
    // subscribed, and once settled it has read for every event so far.
    await forge(['warm-up'])
    await waitFor(async () => c.guard.controlEvents() >= 1, { what: 'the guard to hear an event' })
    await c.guard.settled()
    const reads = () => api.polls.filter((p) => p.url.searchParams.get('instance') === c.guard.instanceId).length
    const before = reads()
    const heard = c.guard.controlEvents()
    await forge([forgedPause(work, 999_999, null), forgedPause(work, 1_000_000, 'order-1'), { type: 'resume', version: 5 }, 'not json at all'])
    // Every event asks for a re-read, and the burst is read once.
    await waitFor(async () => c.guard.controlEvents() >= heard + 4, { what: 'the guard to hear the four events' })
    await c.guard.settled()
    expect(reads() - before).toBe(1)
    expect(c.guard.pauses()).toEqual([])
    expect(c.consumer.paused).toBe(false)
    expect(c.consumer.consumerTag).toEqual(expect.any(String))

    // Nothing was stopped and nothing is held: both messages reach the handler.
    await publish(work, [{ orderId: 'order-1', n: 1 }, { orderId: 'order-2', n: 2 }])
    await waitFor(async () => c.handled.length === 2, { what: 'both messages handled' })
    expect(await heldCount(work)).toBe(0)

    // The old attack: after an event at version 999999, a real pause at a low version was ignored on every poll.
    // Now the list decides, whatever version an event claimed.
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-1', reason: 'real' }, actor: 'ann', allowAnyQueue: true })
    expect(pause.version).toBeLessThan(10)
    await waitFor(async () => c.guard.pauses().some((p) => p.id === pause.id), { what: 'the guard to learn the real pause' })
    await publish(work, [{ orderId: 'order-1', n: 3 }, { orderId: 'order-2', n: 4 }])
    await waitFor(async () => (await heldCount(work)) === 1 && c.handled.length === 3, { what: 'order-1 held, order-2 handled' })
    expect(c.handled.map((h) => h.n)).toEqual([1, 2, 4])

    // A forged resume does not lift the real pause either: the re-read it asks for still lists the pause.
    const heardBefore = c.guard.controlEvents()
    await forge([{ ...forgedPause(work, 2_000_000, 'order-1'), type: 'resume', pause: { ...forgedPause(work, 2_000_000, 'order-1').pause, id: pause.id, status: 'resumed' } }])
    await waitFor(async () => c.guard.controlEvents() > heardBefore, { what: 'the guard to hear the forged resume' })
    await c.guard.settled()
    expect(c.guard.pauses().map((p) => p.id)).toEqual([pause.id])

    // A real whole-queue pause still stops the consumer, and its resume starts it again.
    const whole = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: null, reason: 'downstream outage' }, actor: 'ann', allowAnyQueue: true })
    await waitFor(async () => c.consumer.paused && c.consumer.consumerTag === null, { what: 'the consumer to stop' })
    await resumePause({ db, control: composition().control, id: whole.id, actor: 'ann' })
    await waitFor(async () => !c.consumer.paused && c.consumer.consumerTag !== null, { what: 'the consumer to start again' })
    expect(c.errors).toEqual([])
  })

  it('a flood of 500 forged events costs a few reads, not one each; a real pause is then learnt from its event, not the next poll', async () => {
    const work = await newQueue('sec_flood')
    // Polls a minute apart: whatever the guard learns within the test's waits, it learnt from an event.
    const c = await startConsumer(work, { pollIntervalMs: 600_000 })
    // Every guard on the broker hears every event: count this one's reads.
    const reads = () => api.polls.filter((p) => p.url.searchParams.get('instance') === c.guard.instanceId).length
    const before = reads()
    const flood = Array.from({ length: 500 }, (_, i) => forgedPause(work, 3_000_000 + i, i % 2 === 0 ? null : `order-${i}`))
    await forge(flood)
    // The flood has reached every guard once their event queues are empty (each keeps at most 10, dropping the oldest).
    await waitFor(async () => (await controlEventsBacklog()) === 0, { what: 'the guards to take every event' })
    await waitFor(async () => reads() > before, { what: 'the guard to re-read the list' })
    // Coalesced, nowhere near one read per event. The rate itself (one read per minRefreshIntervalMs while events keep
    // coming, one after the last) is measured on a fake clock in tests/unit/guard-refresh-throttle.test.ts.
    expect(reads() - before).toBeLessThan(flood.length / 10)
    expect(c.guard.pauses()).toEqual([])
    expect(c.consumer.paused).toBe(false)

    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-9', reason: 'real' }, actor: 'ann', allowAnyQueue: true })
    await waitFor(async () => c.guard.pauses().some((p) => p.id === pause.id), { intervalMs: 5, timeoutMs: 30_000, what: 'the real pause, from its event' })
    expect(c.errors).toEqual([])
  })

  it('polls with its queue, vhost, instance id and version, sends the token as a Bearer credential, and leaves a heartbeat', async () => {
    const work = await newQueue('sec_token')
    refusals.set(work, { status: 401, accept: 'gtok-secret' })
    const a = await startConsumer(work, { token: 'gtok-secret', requestHeaders: { Authorization: 'Basic cHJveHk6cHc=', 'x-proxy': 'p1' } })
    // A token read from a file keeps its newline; it is trimmed.
    const b = await startConsumer(work, { token: 'gtok-secret\n' })
    expect(a.guard.instanceId).not.toBe(b.guard.instanceId)
    expect(a.guard.instanceId).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{8}$`))

    const poll = api.polls.filter((p) => p.url.searchParams.get('instance') === a.guard.instanceId).at(-1)!
    // The first poll holds no list yet; every later one says which registry version the guard holds.
    const polls = api.polls.filter((p) => p.url.searchParams.get('instance') === a.guard.instanceId)
    expect(Object.fromEntries(polls[0].url.searchParams)).toEqual({ queue: work, vhost: '/', instance: a.guard.instanceId, guardVersion: GUARD_VERSION })
    expect(Object.fromEntries(poll.url.searchParams)).toEqual({
      queue: work, vhost: '/', instance: a.guard.instanceId, guardVersion: GUARD_VERSION, registryVersion: expect.stringMatching(/^\d+$/),
    })
    // The token replaces an Authorization header given in requestHeaders; other headers pass.
    expect(poll.headers.authorization).toBe('Bearer gtok-secret')
    expect(poll.headers['x-proxy']).toBe('p1')
    // The version it reports is the package's own (packages/guard/package.json), not a second copy.
    expect(GUARD_VERSION).toBe(guardPackage.version)

    const { rows } = await db.sql.query<{ instance: string; guard_version: string; vhost: string }>(
      'SELECT instance, guard_version, vhost FROM guard_heartbeats WHERE queue = $1 ORDER BY instance',
      [work],
    )
    expect(rows).toEqual([a.guard.instanceId, b.guard.instanceId].sort().map((instance) => ({ instance, guard_version: GUARD_VERSION, vhost: '/' })))
    expect(b.errors).toEqual([])
    expect(api.polls.filter((p) => p.url.searchParams.get('instance') === b.guard.instanceId).at(-1)!.headers.authorization).toBe('Bearer gtok-secret')

    // A token no header can carry never works: refused at once, without quoting the secret.
    expect(() => createGuard({ connection: app, queue: work, lazarusUrl: api.url, token: 'gtok\nsecret' })).toThrow(/`token` option holds characters/)
    expect(() => createGuard({ connection: app, queue: work, lazarusUrl: api.url, token: 'gtok\nsecret' })).not.toThrow(/gtok/)
    expect(a.errors).toEqual([])
  })

  it("the list for a guard's poll holds its queue's pauses only; its heartbeat is written at most once a minute", async () => {
    const mine = await newQueue('sec_list')
    const theirs = await newQueue('sec_list_other')
    const own = await createPause({ db, control: composition().control, input: { sourceId, queue: mine, entityKey: 'order-1', reason: 'r' }, actor: 'ann', allowAnyQueue: true })
    await createPause({ db, control: composition().control, input: { sourceId, queue: theirs, entityKey: 'order-1', reason: 'r' }, actor: 'ann', allowAnyQueue: true })
    const beat = { queue: mine, vhost: '/', instance: 'host-1-abcd', guardVersion: '2.0.0' }
    const listed = await listPauses({ db, status: 'active', ...beat })
    expect(listed.pauses.map((p) => p.id)).toEqual([own.id])
    expect(listed.version).toBe((await listPauses({ db, status: 'active' })).version)
    // Another vhost has no pauses of that name.
    expect((await listPauses({ db, status: 'active', queue: mine, vhost: 'other' })).pauses).toEqual([])

    const seen = async () =>
      (await db.sql.query<{ first: Date; last: Date; v: string }>(
        `SELECT first_seen_at AS first, last_seen_at AS last, guard_version AS v FROM guard_heartbeats WHERE vhost = '/' AND queue = $1 AND instance = $2`,
        [mine, beat.instance],
      )).rows
    const [first] = await seen()
    expect(first.v).toBe('2.0.0')
    await listPauses({ db, status: 'active', ...beat })
    expect(await recordGuardHeartbeat({ sql: db.sql, beat: { ...beat, guardVersion: '2.0.1' } })).toBe(false)
    expect(await seen()).toEqual([first])

    // A minute later the next poll writes again.
    await db.sql.query(`UPDATE guard_heartbeats SET last_seen_at = last_seen_at - interval '61 seconds', first_seen_at = first_seen_at - interval '61 seconds' WHERE instance = $1`, [beat.instance])
    expect(await recordGuardHeartbeat({ sql: db.sql, beat: { ...beat, guardVersion: '2.0.1' } })).toBe(true)
    const [after] = await seen()
    expect(after.v).toBe('2.0.1')
    expect(after.last.getTime()).toBeGreaterThan(after.first.getTime() + 60_000)
  })

  it('refused (401, no token): says so on every poll and once a minute on the console, keeps polling, consumes without pauses', async () => {
    const work = await newQueue('sec_refused')
    refusals.set(work, { status: 401, accept: 'right-token' })
    const shouted = vi.spyOn(console, 'error').mockImplementation(() => {})
    // Lazarus has a pause on this queue, which this guard cannot read.
    const pause = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: 'order-1', reason: 'unseen' }, actor: 'ann', allowAnyQueue: true })
    const c = await startConsumer(work, { startTimeoutMs: 300, retryDelayMs: 50 })

    const polled = (q: string) => api.polls.filter((p) => p.url.searchParams.get('queue') === q).length
    await waitFor(async () => polled(work) >= 4, { what: 'several refused polls' })
    const refusedReports = c.errors.filter((e) => e.includes('HTTP 401'))
    expect(refusedReports.length).toBeGreaterThanOrEqual(3)
    expect(refusedReports[0]).toMatch(/no token was sent; set the guard option `token`/)
    expect(c.errors).toContainEqual(expect.stringMatching(/consuming without pauses \(holding nothing\)/))
    const ours = shouted.mock.calls.filter((call) => String(call[0]).includes(work))
    expect(ours).toHaveLength(1)
    expect(String(ours[0][0])).toMatch(/HTTP 401.*`token`/)

    // Without a list it holds nothing: the paused entity's message reaches the handler (it is not lost either way).
    expect(c.consumer.consumerTag).toEqual(expect.any(String))
    await publish(work, [{ orderId: 'order-1', n: 1 }])
    await waitFor(async () => c.handled.length === 1, { what: 'the message handled' })
    expect(await heldCount(work)).toBe(0)
    expect(c.guard.pauses()).toEqual([])

    // Once the right token is there (here: Lazarus accepts this guard), the next poll brings the pause.
    refusals.delete(work)
    await waitFor(async () => c.guard.pauses().some((p) => p.id === pause.id), { what: 'the pause, once the poll is accepted' })
  })

  it('refused after a list was read (403, token revoked): forgets the pauses it can no longer follow, so a whole-queue pause does not stop the consumer for good', async () => {
    const work = await newQueue('sec_revoked')
    vi.spyOn(console, 'error').mockImplementation(() => {})
    const c = await startConsumer(work, { token: 'soon-revoked', retryDelayMs: 50 })
    const whole = await createPause({ db, control: composition().control, input: { sourceId, queue: work, entityKey: null, reason: 'deploy' }, actor: 'ann', allowAnyQueue: true })
    await waitFor(async () => c.consumer.paused && c.consumer.consumerTag === null, { what: 'the consumer to stop' })
    await publish(work, [{ orderId: 'order-1', n: 1 }])

    refusals.set(work, { status: 403, accept: null })
    await c.guard.refresh()
    expect(c.errors.at(-1)).toMatch(/HTTP 403.*was not accepted/)
    await waitFor(async () => c.handled.length === 1 && c.consumer.consumerTag !== null, { what: 'consumption to go on without the pause' })
    expect(await queueDepth(work)).toBe(0)
    expect(whole.status).toBe('active')
  })
})
