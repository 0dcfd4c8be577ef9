import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import type { Channel, ChannelModel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { pgSql, type Sql } from '@/lib/server/platform/db/sql'
import { ITEM_STATUS_SQL } from '@/lib/server/replay/item-status-sql'
import { withOutput } from '../helpers/child-output'
import { AMQP_URL, brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { bySize } from '../helpers/soak'
import { createEmptyPostgres } from '../helpers/engine-db'
import { endPool } from '../helpers/end-pool'
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver'
import { freePort } from '../e2e/support/lazarus-server'

/**
 * A fleet on one PostgreSQL and one RabbitMQ (docs/ARCHITECTURE.md#processes): 2 web processes and 3 workers of the
 * production build, real processes started together on an empty database, doing real work. Each duty that must happen
 * once happens once however many processes could do it: migrations, storing a message, an alert and its webhook, a
 * replay job's publishes (a SIGKILLed worker's job is taken over, and only what it had in flight goes out twice), an
 * approval's expiry, a scheduled start.
 * Then every process is restarted in turn with SIGTERM while traffic flows, as Kubernetes rolls a Deployment: nothing
 * is lost, no job is stuck, and no request fails.
 */
const BUILD = path.resolve(import.meta.dirname, '../../.next/standalone')
const TOKEN = 'fleet-test-admin-token-0123456789abcdef0123'
const MESSAGES = bySize(15_000, 50_000)
const JOBS = 10
// Each job's publish rate, per second.
const RATE = 300
const KEYS = ['a', 'b', 'c'] as const
const SERVICES = ['inventory', 'billing', 'shipping', 'pricing']
// The executor's publish window; what a SIGKILL can duplicate is bounded by what it had claimed and not confirmed.
const WINDOW = 100

const exchange = uniqueName('fleet_x')
const work = Object.fromEntries(KEYS.map((k) => [k, uniqueName(`fleet_work_${k}`)])) as Record<(typeof KEYS)[number], string>
const dlqs = KEYS.map((k) => uniqueName(`fleet_dlq_${k}`))
// The rolling restart's traffic and its replay dead-letter through queues of their own into the first DLQ.
const trickleWork = uniqueName('fleet_work_trickle')
const restWork = uniqueName('fleet_work_rest')

type Process = ChildProcess & { output: () => string; role: 'web' | 'worker'; port?: number }
const fleet: Process[] = []
let database: { url: string; drop(): Promise<void> }
let pool: pg.Pool
let sql: Sql
let connection: ChannelModel
let channel: Channel
let webhook: WebhookReceiver

const commonEnv = () => ({
  PATH: process.env.PATH ?? '',
  NODE_ENV: 'production' as const,
  DATABASE_URL: database.url,
  AMQP_URL,
  LAZARUS_SOURCES: dlqs.join(','),
  LAZARUS_CONTROL_EXCHANGE: `${exchange}.control`,
  LAZARUS_HOLD_QUEUE: `${exchange}.hold`,
  LAZARUS_ADMIN_TOKEN: TOKEN,
  LAZARUS_REPLAY_LEASE_MS: '1500',
  LAZARUS_REPLAY_POLL_MS: '100',
  LAZARUS_REPLAY_WINDOW: String(WINDOW),
  LAZARUS_ALERT_INTERVAL_S: '1',
  LAZARUS_TOPOLOGY_INTERVAL_S: '0',
  LAZARUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  LAZARUS_LOG_LEVEL: 'warn',
})

async function startProcess(role: 'web' | 'worker'): Promise<Process> {
  const port = role === 'web' ? await freePort() : undefined
  const env = role === 'web' ? { ...commonEnv(), PORT: String(port), HOSTNAME: '127.0.0.1', LAZARUS_RUN_WORKERS: '0' } : commonEnv()
  const child = spawn(process.execPath, ['--max-semi-space-size=8', path.join(BUILD, 'dist', role === 'web' ? 'serve.mjs' : 'worker.mjs')], {
    cwd: BUILD,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const started = Object.assign(withOutput(child), { role, port })
  fleet.push(started)
  return started
}

const alive = (role: 'web' | 'worker') => fleet.filter((p) => p.role === role && p.exitCode === null && p.signalCode === null)
const url = (web: Process) => `http://127.0.0.1:${web.port}`

async function api<T>(web: Process, route: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`${url(web)}${route}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } })
  const body = (await response.json()) as T
  if (!response.ok) throw new Error(`${route}: HTTP ${response.status} ${JSON.stringify(body)}`)
  return body
}

async function ready(started: Process): Promise<void> {
  const failed = () => (started.exitCode !== null ? Promise.reject(new Error(`${started.role} exited ${started.exitCode}:\n${started.output()}`)) : undefined)
  if (started.role === 'web') {
    await waitFor(async () => (await failed()) ?? (await fetch(`${url(started)}/api/health`).catch(() => undefined))?.ok, { timeoutMs: 60_000, what: 'a web process to answer' })
  } else {
    // A worker is in the fleet once it consumes every DLQ.
    const before = await consumerCounts()
    await waitFor(async () => (await failed()) ?? (await consumerCounts()).every((n, i) => n > before[i]), { timeoutMs: 60_000, what: 'a worker to consume every DLQ' })
  }
}

const consumerCounts = () => Promise.all(dlqs.map(async (q) => (await channel.checkQueue(q)).consumerCount))

async function stop(target: Process): Promise<number | null> {
  target.kill('SIGTERM')
  if (target.exitCode !== null) return target.exitCode
  const [code] = await once(target, 'exit')
  return code as number | null
}

async function count(statement: string, params: unknown[] = []): Promise<number> {
  const { rows } = await sql.query<{ n: string }>(statement, params)
  return Number(rows[0].n)
}

/** Publishes to the work queues through the exchange (confirmed), then rejects each from `queues`: RabbitMQ dead-letters them. */
async function deadLetter(messages: { key: string; id: string; service: string }[], queues: string[]): Promise<void> {
  const publisher = await connection.createConfirmChannel()
  for (const m of messages) {
    const headers = { 'x-exception-message': `Timeout calling the ${m.service} service`, 'x-exception-stacktrace': `java.net.SocketTimeoutException: Timeout calling the ${m.service} service\n\tat com.acme.${m.service}.Client.call(Client.java:42)` }
    publisher.publish(exchange, m.key, Buffer.from(JSON.stringify({ id: m.id, service: m.service })), { messageId: m.id, headers, persistent: false })
  }
  await publisher.waitForConfirms()
  await publisher.close()
  const rejecter = await connection.createChannel()
  await rejecter.prefetch(1_000)
  let rejected = 0
  await new Promise<void>((resolve) => {
    for (const queue of queues) {
      void rejecter.consume(queue, (message) => {
        if (!message) return
        rejecter.nack(message, false, false)
        if (++rejected === messages.length) resolve()
      })
    }
  })
  // A round trip: the broker has taken every nack before the channel closes (tests/e2e/support/dead-letter.ts).
  await rejecter.checkQueue(queues[0])
  await rejecter.close()
}

describe('a fleet of 2 web processes and 3 workers on one database', () => {
  beforeAll(async () => {
    if (!existsSync(path.join(BUILD, 'dist/worker.mjs'))) throw new Error('no production build: run `npm run build` first (`npm run test:artifact` does)')
    database = await createEmptyPostgres('lazarus_fleet')
    pool = new pg.Pool({ connectionString: database.url, max: 4 })
    sql = pgSql(pool)
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await channel.assertExchange(exchange, 'direct', { durable: false })
    for (const [i, key] of KEYS.entries()) {
      await channel.assertQueue(dlqs[i], { durable: true })
      await channel.assertQueue(work[key], { durable: false, deadLetterExchange: '', deadLetterRoutingKey: dlqs[i] })
      await channel.bindQueue(work[key], exchange, key)
    }
    for (const [queue, key] of [[trickleWork, 'trickle'], [restWork, 'rest']]) {
      await channel.assertQueue(queue, { durable: false, deadLetterExchange: '', deadLetterRoutingKey: dlqs[0] })
      await channel.bindQueue(queue, exchange, key)
    }
    webhook = await startWebhookReceiver()
  })

  afterAll(async () => {
    for (const p of fleet) if (p.exitCode === null) p.kill('SIGKILL')
    await Promise.all(fleet.map((p) => (p.exitCode === null && p.signalCode === null ? once(p, 'exit') : undefined)))
    for (const queue of [...dlqs, ...Object.values(work), trickleWork, restWork, `${exchange}.hold`]) await channel?.deleteQueue(queue).catch(() => {})
    await channel?.deleteExchange(exchange).catch(() => {})
    await channel?.deleteExchange(`${exchange}.control`).catch(() => {})
    await connection?.close().catch(() => {})
    await webhook?.close()
    if (pool) await endPool(pool)
    await database?.drop()
  })

  it('starts together on an empty database, which is migrated once', async () => {
    // All five at once: the migrations' advisory lock makes one apply them and the others find nothing to do.
    const started = await Promise.all([startProcess('web'), startProcess('web'), startProcess('worker'), startProcess('worker'), startProcess('worker')])
    for (const p of started.filter((s) => s.role === 'web')) await ready(p)
    await waitFor(async () => (await consumerCounts()).every((n) => n === 3), { timeoutMs: 60_000, what: 'three consumers on every DLQ' })
    const migrations = readdirSync(path.join(BUILD, 'prisma/migrations')).length
    expect(await count('SELECT count(*) AS n FROM _lazarus_migrations')).toBe(migrations)
    expect(await count('SELECT count(DISTINCT name) AS n FROM _lazarus_migrations')).toBe(migrations)
    expect(alive('web')).toHaveLength(2)
    expect(alive('worker')).toHaveLength(3)
  })

  it('stores each message exactly once with three workers competing on every DLQ, counters equal to the rows', async () => {
    const [web] = alive('web')
    // The alert and its webhook are set up first, so each new group is an event every evaluator could report.
    await api(web, '/api/alerts/webhooks', { method: 'POST', body: JSON.stringify({ url: webhook.url }) })
    await api(web, '/api/alerts/rules', { method: 'POST', body: JSON.stringify({ kind: 'new-group' }) })

    const messages = Array.from({ length: MESSAGES }, (_, i) => ({ key: KEYS[i % KEYS.length], id: `fleet-${i}`, service: SERVICES[i % SERVICES.length] }))
    await deadLetter(messages, Object.values(work))
    await waitFor(async () => (await count('SELECT count(*) AS n FROM dead_letters')) >= MESSAGES, { timeoutMs: 120_000, intervalMs: 250, what: `${MESSAGES} messages stored` })

    expect(await count('SELECT count(*) AS n FROM dead_letters')).toBe(MESSAGES)
    expect(await count(`SELECT count(DISTINCT properties->>'messageId') AS n FROM dead_letters`)).toBe(MESSAGES)
    expect(await count('SELECT count(*) AS n FROM dead_letters WHERE seen_count <> 1')).toBe(0)
    const { rows: perQueue } = await sql.query<{ queue: string; n: string }>('SELECT s.queue, count(*) AS n FROM dead_letters d JOIN sources s ON s.id = d.source_id GROUP BY s.queue')
    expect(Object.fromEntries(perQueue.map((r) => [r.queue, Number(r.n)]))).toEqual(Object.fromEntries(dlqs.map((q, i) => [q, messages.filter((m) => m.key === KEYS[i]).length])))
    const { rows: groups } = await sql.query<{ id: string; count: string; rows: string }>(
      'SELECT g.id::text, g.count, (SELECT count(*) FROM dead_letters d WHERE d.group_id = g.id) AS rows FROM error_groups g',
    )
    expect(groups.length).toBe(SERVICES.length)
    for (const group of groups) expect(Number(group.count), `group ${group.id}`).toBe(Number(group.rows))
  })

  it('reports each new group in one alert and one webhook delivery, not one per worker', async () => {
    const groups = (await sql.query<{ id: string }>('SELECT id::text FROM error_groups ORDER BY id')).rows.map((r) => r.id)
    const delivered = () => webhook.bodies.flatMap((body: { alerts: { subject: { id: string } }[] }) => body.alerts.map((a) => a.subject.id)).sort()
    // Delivery is by digest per rule and round, and posts over LAZARUS_WEBHOOK_MAX_PER_MINUTE wait for the next clock
    // minute: a bound past one minute, not a speed limit (one CI run on a busy machine missed 30 s).
    await waitFor(async () => delivered().length >= groups.length, { timeoutMs: 90_000, what: 'a webhook for every new group' })
    // Two more evaluations by every worker: none reports a group again.
    const evaluated = async () => (await sql.query<{ at: Date }>('SELECT evaluated_at AS at FROM alert_rules')).rows[0].at.getTime()
    const since = await evaluated()
    await waitFor(async () => (await evaluated()) > since + 1_500, { timeoutMs: 30_000, what: 'two more alert evaluations' })
    expect(delivered()).toEqual(groups)
    expect(await count(`SELECT count(*) AS n FROM alert_events WHERE kind = 'new-group' AND state = 'firing'`)).toBe(groups.length)
  })

  it('runs ten replays started at once, each by one worker at a time; a SIGKILLed worker duplicates only what it had in flight', async () => {
    const ids = (await sql.query<{ id: string }>('SELECT id::text FROM dead_letters ORDER BY id')).rows.map((r) => r.id)
    const webs = alive('web')
    const chunk = Math.ceil(ids.length / JOBS)
    // Created while the hunt below already looks: under a busy machine the first jobs run before the last is created.
    const creating = Promise.all(
      Array.from({ length: JOBS }, (_, j) => {
        const selection = ids.slice(j * chunk, (j + 1) * chunk)
        return api<{ id: string }>(webs[j % webs.length], '/api/replays', {
          method: 'POST',
          // Slow enough that a job is caught mid-flight however busy the machine. At 300/s a claim is 300 items and the
          // next is claimed ahead, so a job has items both in flight and pending for all but its last two claims (about
          // 3 of the 5 s a 1,500-item job takes).
          body: JSON.stringify({ selection: { ids: selection }, ratePerSecond: RATE, confirmCount: selection.length }),
        }).then((job) => ({ ...job, size: selection.length }))
      }),
    )

    // Freeze a worker while a job it leases has items both in flight and pending, note them, then SIGKILL it.
    const openItems = () =>
      sql.query<{ job: string; owner: string; replay_id: string; status: string }>(
        `SELECT j.id::text AS job, j.lease_owner AS owner, i.replay_id, ${ITEM_STATUS_SQL} AS status
           FROM replay_items i JOIN replay_jobs j ON j.id = i.job_id WHERE i.status IN ('in_flight', 'pending') AND j.lease_owner IS NOT NULL`,
      )
    let inFlightAtKill = new Set<string>()
    let victim: Process | undefined
    for (const deadline = Date.now() + 60_000; !victim && Date.now() < deadline; ) {
      const { rows } = await openItems()
      const leased = rows.find((r) => r.status === 'in_flight')
      const worker = leased && alive('worker').find((w) => leased.owner.split(':')[1] === String(w.pid))
      if (!leased || !worker) {
        await new Promise((resolve) => setTimeout(resolve, 5))
        continue
      }
      worker.kill('SIGSTOP')
      // A worker runs several jobs at once: what it had in flight is every item of every job it leased.
      const held = (await openItems()).rows.filter((r) => r.owner.split(':')[1] === String(worker.pid))
      const frozen = held.filter((r) => r.job === leased.job)
      const inFlight = frozen.filter((r) => r.status === 'in_flight')
      if (inFlight.length > 0 && frozen.length > inFlight.length) {
        inFlightAtKill = new Set(held.filter((r) => r.status === 'in_flight').map((r) => r.replay_id))
        victim = worker
        worker.kill('SIGKILL')
        await once(worker, 'exit')
      } else {
        worker.kill('SIGCONT')
      }
    }
    const jobs = await creating
    expect(victim, 'a worker caught with a job both in flight and pending').toBeDefined()
    await ready(await startProcess('worker'))

    await waitFor(
      async () => {
        const { rows } = await sql.query<{ status: string }>('SELECT status FROM replay_jobs WHERE id = ANY($1::bigint[])', [jobs.map((j) => j.id)])
        return rows.every((r) => r.status === 'completed')
      },
      { timeoutMs: 180_000, intervalMs: 250, what: 'every replay job to complete' },
    )
    const { rows: done } = await sql.query<{ id: string; confirmed: string }>(
      `SELECT job_id::text AS id, count(*) FILTER (WHERE status = 'confirmed') AS confirmed FROM replay_items WHERE job_id = ANY($1::bigint[]) GROUP BY job_id`,
      [jobs.map((j) => j.id)],
    )
    expect(Object.fromEntries(done.map((r) => [r.id, Number(r.confirmed)]))).toEqual(Object.fromEntries(jobs.map((j) => [j.id, j.size])))

    // Every item reached its queue; an item that reached it twice was in flight when its worker died.
    const received = new Map<string, number>()
    const consumer = await connection.createChannel()
    await consumer.prefetch(2_000)
    const expected = (await count('SELECT count(*) AS n FROM replay_items WHERE job_id = ANY($1::bigint[])', [jobs.map((j) => j.id)]))
    let total = 0
    await new Promise<void>((resolve) => {
      const take = (message: ConsumeMessage | null) => {
        if (!message) return
        const replayId = String(message.properties.headers?.['x-lazarus-replay-id'])
        received.set(replayId, (received.get(replayId) ?? 0) + 1)
        consumer.ack(message)
        if (++total >= expected && received.size === expected) resolve()
      }
      for (const queue of Object.values(work)) void consumer.consume(queue, take)
    })
    // Whatever else is queued behind them are more duplicates, counted too.
    for (const queue of Object.values(work)) {
      for (let message = await consumer.get(queue); message; message = await consumer.get(queue)) {
        const replayId = String(message.properties.headers?.['x-lazarus-replay-id'])
        received.set(replayId, (received.get(replayId) ?? 0) + 1)
        consumer.ack(message)
      }
    }
    await consumer.close()
    expect(received.size).toBe(expected)
    const duplicated = [...received].filter(([, n]) => n > 1).map(([replayId]) => replayId)
    expect(duplicated.filter((replayId) => !inFlightAtKill.has(replayId))).toEqual([])
    expect([...received.values()].every((n) => n <= 2)).toBe(true)
    // The figures the closing notes of a fleet change quote.
    console.info(`fleet replay: ${JOBS} jobs, ${expected} items, 1 worker SIGKILLed with ${inFlightAtKill.size} in flight, ${duplicated.length} published twice`)
  })

  it('loses nothing, strands no job and fails no request while every process is restarted in turn with SIGTERM', async () => {
    // A replay of its own, slow enough (about 10 s) to run through the restarts of the workers.
    await deadLetter(Array.from({ length: 3_000 }, (_, i) => ({ key: 'rest', id: `rest-${i}`, service: SERVICES[0] })), [restWork])
    await waitFor(async () => (await count(`SELECT count(*) AS n FROM dead_letters WHERE properties->>'messageId' LIKE 'rest-%'`)) === 3_000, { timeoutMs: 60_000, what: 'the replay’s messages stored' })
    const ids = (await sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE properties->>'messageId' LIKE 'rest-%'`)).rows.map((r) => r.id)
    const [firstWeb] = alive('web')
    const job = await api<{ id: string }>(firstWeb, '/api/replays', { method: 'POST', body: JSON.stringify({ selection: { ids }, ratePerSecond: 300, confirmCount: ids.length }) })

    // Traffic: dead letters arriving, a replay running, and the API asked through a balancer over the web replicas.
    const arrivals = 600
    let published = 0
    const trickle = (async () => {
      for (let i = 0; i < arrivals; i += 20) {
        const batch = Array.from({ length: 20 }, (_, k) => ({ key: 'trickle', id: `roll-${i + k}`, service: SERVICES[(i + k) % SERVICES.length] }))
        await deadLetter(batch, [trickleWork])
        published += batch.length
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    })()
    // The balancer sends each request to a replica in rotation. As Kubernetes does for a pod it stops, a web process
    // leaves the rotation first, and is signalled once the balancer has moved on (the manifest's preStop pause,
    // deploy/kubernetes/web.yaml); what it still has in flight then must be answered.
    const rotation = new Set(alive('web'))
    const finishedByLane = [0, 0, 0, 0]
    const failures: string[] = []
    let balancing = true
    const balancer = Promise.all(
      finishedByLane.map(async (_, lane) => {
        for (let n = lane; balancing; n++) {
          const replicas = [...rotation]
          const target = replicas[n % replicas.length]
          try {
            const response = await fetch(`${url(target)}/api/messages?limit=5`, { headers: { authorization: `Bearer ${TOKEN}` } })
            await response.arrayBuffer()
            if (!response.ok) failures.push(`${target.port}: HTTP ${response.status}`)
          } catch (error) {
            failures.push(`${target.port}: ${String((error as Error).cause ?? (error as Error).message)}`)
          }
          finishedByLane[lane]++
        }
      }),
    )
    const balancerMovedOn = async () => {
      const mark = [...finishedByLane]
      await waitFor(async () => finishedByLane.every((n, lane) => n >= mark[lane] + 2), { timeoutMs: 30_000, intervalMs: 10, what: 'the balancer to move on' })
    }

    for (const old of [...alive('worker'), ...alive('web')]) {
      const replacement = await startProcess(old.role)
      await ready(replacement)
      if (old.role === 'web') {
        rotation.add(replacement)
        rotation.delete(old)
        await balancerMovedOn()
      }
      expect(await stop(old), old.output()).toBe(0)
    }
    await trickle
    balancing = false
    await balancer

    expect(failures).toEqual([])
    expect(finishedByLane.every((n) => n > 0)).toBe(true)
    console.info(`fleet restart: 5 processes restarted with SIGTERM, ${finishedByLane.reduce((a, b) => a + b, 0)} requests, ${failures.length} failed, ${published} messages arriving meanwhile`)
    await waitFor(async () => (await count(`SELECT count(*) AS n FROM dead_letters WHERE properties->>'messageId' LIKE 'roll-%'`)) >= published, {
      timeoutMs: 60_000,
      what: 'every message that arrived during the restarts stored',
    })
    expect(await count(`SELECT count(DISTINCT properties->>'messageId') AS n FROM dead_letters WHERE properties->>'messageId' LIKE 'roll-%'`)).toBe(arrivals)
    expect(await count(`SELECT count(*) AS n FROM dead_letters WHERE properties->>'messageId' LIKE 'roll-%'`)).toBe(arrivals)
    await waitFor(async () => (await sql.query<{ status: string }>('SELECT status FROM replay_jobs WHERE id = $1::bigint', [job.id])).rows[0].status === 'completed', {
      timeoutMs: 120_000,
      what: 'the replay running through the restarts to complete',
    })
    expect(await count(`SELECT count(*) AS n FROM replay_items WHERE job_id = $1::bigint AND status = 'confirmed'`, [job.id])).toBe(ids.length)
    expect(alive('web')).toHaveLength(2)
    expect(alive('worker')).toHaveLength(3)
  })

  it('expires an approval request once and starts a scheduled replay once, however many workers look', async () => {
    const [web] = alive('web')
    const dead = (await sql.query<{ id: string }>(`SELECT d.id::text FROM dead_letters d LEFT JOIN dead_letter_states s ON s.dead_letter_id = d.id
      WHERE d.properties->>'messageId' LIKE 'roll-%' AND coalesce(s.status, 'dead') = 'dead' ORDER BY d.id LIMIT 150`)).rows.map((r) => r.id)
    expect(dead).toHaveLength(150)
    const audits = (action: string, jobId: string) => count(`SELECT count(*) AS n FROM audit_log WHERE action = $1 AND subject_type = 'replay' AND subject_id = $2`, [action, jobId])
    const statusOf = async (jobId: string) => (await sql.query<{ status: string }>('SELECT status FROM replay_jobs WHERE id = $1::bigint', [jobId])).rows[0].status

    // Approval for anything above 10 messages, waiting one second: every worker's executor looks for expired requests.
    const approval = { aboveMessages: 10, editedMessages: false, customTarget: false, criticalSources: false }
    await api(web, '/api/settings/replay-approval', { method: 'PUT', body: JSON.stringify({ ...approval, ttlSeconds: 1 }) })
    const waiting = await api<{ id: string; status: string }>(web, '/api/replays', { method: 'POST', body: JSON.stringify({ selection: { ids: dead.slice(0, 50) } }) })
    expect(waiting.status).toBe('awaiting_approval')
    await waitFor(async () => (await statusOf(waiting.id)) === 'expired', { timeoutMs: 30_000, what: 'the approval request to expire' })
    await api(web, '/api/settings/replay-approval', { method: 'PUT', body: JSON.stringify({ ...approval, aboveMessages: null, ttlSeconds: null }) })

    const startAt = new Date(Date.now() + 2_000).toISOString()
    const scheduled = await api<{ id: string; status: string }>(web, '/api/replays', { method: 'POST', body: JSON.stringify({ selection: { ids: dead.slice(50) }, startAt, confirmCount: 100 }) })
    expect(scheduled.status).toBe('scheduled')
    await waitFor(async () => (await statusOf(scheduled.id)) === 'completed', { timeoutMs: 60_000, what: 'the scheduled replay to run' })

    // Both are decided: the workers keep looking, and nothing changes.
    const evaluated = async () => (await sql.query<{ at: Date }>('SELECT evaluated_at AS at FROM alert_rules')).rows[0].at.getTime()
    const since = await evaluated()
    await waitFor(async () => (await evaluated()) > since + 1_500, { timeoutMs: 30_000, what: 'two more rounds of every worker' })
    expect(await audits('replay.expired', waiting.id)).toBe(1)
    expect(await audits('replay.started', waiting.id)).toBe(0)
    expect(await audits('replay.started', scheduled.id)).toBe(1)
    expect(await count(`SELECT count(*) AS n FROM replay_items WHERE job_id = $1::bigint AND status = 'confirmed'`, [scheduled.id])).toBe(100)
  })
})
