import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as topologyRoute from '@/app/api/topology/route'
import * as runsRoute from '@/app/api/topology/runs/route'
import { connect } from '@/lib/server/platform/broker/amqplib'
import { startTopologyDoctor } from '@/lib/server/engines/topology-doctor/topology-doctor-loop'
import { logger } from '@/lib/server/platform/log'
import { applyTopology } from '@/lib/server/topology/builder/apply-topology'
import type { TopologyDto } from '@/lib/shared/schemas/topology'
import type { ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { createTestUser, type TestUser } from '../helpers/auth'
import { waitFor } from '../helpers/broker'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { createTestVhost, testVhostName, type TestVhost } from '../helpers/topology-vhost'

// The engine reads the watched vhosts from the configuration: this file's clean vhost, named before the config is read.
const WATCHED = testVhostName('topology_watched')
process.env.LAZARUS_TOPOLOGY_VHOSTS = WATCHED
// The one queue an admin allowed the doctor to peek at (docs/topology.md#sampling).
process.env.LAZARUS_TOPOLOGY_SAMPLE_QUEUES = 'billing.delay'

const SPEC: ThreeTierSpecInput = { name: 'orders', routingKeys: ['order.created'], retryDelaysMs: [30_000, 300_000, 3_600_000], dlqMaxLength: 100_000 }

/* The doctor end to end on the real broker (docs/topology.md#runs): Run now, the page's read, the per-source view, the schedule. */
describe('topology doctor: runs, the API and the schedule', () => {
  let db: TestDb
  let operator: TestUser
  let viewer: TestUser
  let shop: TestVhost
  let watched: TestVhost
  let dlqSourceId: string

  const call = async (handler: typeof topologyRoute.GET | typeof runsRoute.POST, path: string, user: TestUser, body?: unknown): Promise<TopologyDto> => {
    const response = await handler(
      new Request(`http://lazarus.test${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: user.authorization, 'content-type': 'application/json', origin: 'http://lazarus.test' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      { params: Promise.resolve({}) },
    )
    expect(response.status, await response.clone().text()).toBe(200)
    return (await response.json()) as TopologyDto
  }

  beforeAll(async () => {
    db = await createTestDb()
    operator = await createTestUser(db, 'topology-api-operator', [{ role: 'operator' }])
    viewer = await createTestUser(db, 'topology-api-viewer', [{ role: 'viewer' }])
    shop = await createTestVhost('topology_api')
    watched = await createTestVhost('topology_watched', WATCHED)
    for (const vhost of [shop, watched]) await applyTopology({ db, vhost: vhost.name, spec: SPEC, actor: 'setup' })
    // One trap next to the builder's topology in `shop`: a work queue whose DLX was never declared.
    const connection = await connect(shop.amqpUrl)
    const ch = await connection.createChannel()
    await ch.assertQueue('billing.work', { durable: true, arguments: { 'x-dead-letter-exchange': 'billing.retry' } })
    await connection.close()
    // Lazarus' own hold queue, drained as a source: an unbounded DLQ by the rules, but Lazarus declares it (no advice to give).
    const own = await connect(watched.amqpUrl)
    await (await own.createChannel()).assertQueue('lazarus.hold', { durable: true, arguments: { 'x-single-active-consumer': true } })
    await own.close()
    await db.sql.query(`INSERT INTO sources (vhost, queue, enabled) VALUES ($1, 'lazarus.hold', false)`, [watched.name])
    dlqSourceId = (await db.sql.query<{ id: string }>(`INSERT INTO sources (vhost, queue, enabled) VALUES ($1, 'orders.dlq', false) RETURNING id::text`, [shop.name])).rows[0].id
  })
  afterAll(async () => {
    await shop?.remove()
    await watched?.remove()
    await db?.drop()
  })

  it('the builder\'s topology gets a clean bill, with what was checked', async () => {
    const clean = await call(runsRoute.POST, '/api/topology/runs', operator, { vhost: watched.name })
    expect(clean.findings).toEqual([])
    expect(clean.error).toBeNull()
    expect(clean.brokerVersion).toMatch(/^3\./)
    expect(clean.nodes.map((n) => n.name)).toEqual(expect.arrayContaining(['orders.work', 'orders.retry.30s', 'orders.retry.5m', 'orders.retry.1h', 'orders.dlq', 'orders.dead', 'lazarus.hold']))
    // Every rule says what it looked at, so "no findings" means something.
    expect(clean.checks.length).toBeGreaterThanOrEqual(10)
    expect(clean.checks.every((c) => c.raised === 0)).toBe(true)
    expect(clean.checks.find((c) => c.kind === 'dlx-unroutable')?.checked).toBeGreaterThanOrEqual(4)
  })

  it('Run now finds the trap beside it, names its objects, and the page reads the same run', async () => {
    const ran = await call(runsRoute.POST, '/api/topology/runs', operator, { vhost: shop.name })
    expect(ran.findings.map((f) => f.kind)).toEqual(['dlx-missing'])
    expect(ran.findings[0].objects).toEqual(expect.arrayContaining([{ type: 'queue', name: 'billing.work' }, { type: 'exchange', name: 'billing.retry' }]))
    expect(ran.nodes.find((n) => n.name === 'billing.work')?.severity).toBe('error')

    const read = await call(topologyRoute.GET, `/api/topology?vhost=${encodeURIComponent(shop.name)}`, viewer)
    expect(read.checkedAt).toBe(ran.checkedAt)
    expect(read.findings.map((f) => f.id)).toEqual(ran.findings.map((f) => f.id))
    expect(read.vhosts).toEqual(expect.arrayContaining([WATCHED, shop.name]))
  })

  it('a source\'s view holds its queue\'s neighbourhood and only the findings there', async () => {
    const focused = await call(topologyRoute.GET, `/api/topology?source=${dlqSourceId}`, viewer)
    expect(focused.vhost).toBe(shop.name)
    const names = focused.nodes.map((n) => n.name)
    expect(names).toEqual(expect.arrayContaining(['orders.dlq', 'orders.dead', 'orders.retry']))
    expect(names).not.toContain('billing.work')
    expect(focused.findings).toEqual([])
  })

  it('an opted-in classic delay queue is sampled for per-message TTLs, and its messages are put back', async () => {
    const connection = await connect(shop.amqpUrl)
    const ch = await connection.createConfirmChannel()
    await ch.assertQueue('billing.delay', { durable: true, arguments: { 'x-dead-letter-exchange': 'orders' } })
    for (const expiration of ['600000', '5000', '600000']) ch.sendToQueue('billing.delay', Buffer.from('{}'), { expiration })
    await ch.waitForConfirms()
    const ran = await call(runsRoute.POST, '/api/topology/runs', operator, { vhost: shop.name })
    const mixed = ran.findings.find((f) => f.kind === 'delay-mixed-ttl')
    expect(mixed?.objects).toContainEqual({ type: 'queue', name: 'billing.delay' })
    expect(JSON.stringify(mixed?.evidence)).toMatch(/5000/)
    expect((await ch.checkQueue('billing.delay')).messageCount).toBe(3)
    await connection.close()
  })

  it('the schedule finds a new trap in a watched vhost and resolves it once it is fixed', async () => {
    const doctor = startTopologyDoctor({ db, log: logger('topology-test'), everyMs: 300 })
    try {
      const connection = await connect(watched.amqpUrl)
      const ch = await connection.createChannel()
      await ch.assertQueue('payments.dlq', { durable: true, arguments: { 'x-expires': 60_000, 'x-dead-letter-exchange': 'orders.dead' } })
      const opened = await waitFor(
        async () => {
          const t = await call(topologyRoute.GET, `/api/topology?vhost=${encodeURIComponent(watched.name)}`, viewer)
          return t.findings.find((f) => f.kind === 'expires-with-dlx')
        },
        { timeoutMs: 20_000, what: 'the scheduled run to find the expiring queue' },
      )
      expect(opened.objects).toContainEqual({ type: 'queue', name: 'payments.dlq' })
      await ch.deleteQueue('payments.dlq')
      await connection.close()
      await waitFor(
        async () => {
          const t = await call(topologyRoute.GET, `/api/topology?vhost=${encodeURIComponent(watched.name)}`, viewer)
          return t.findings.length === 0
        },
        { timeoutMs: 20_000, what: 'the scheduled run to resolve it' },
      )
    } finally {
      await doctor.stop()
    }
  })
})
