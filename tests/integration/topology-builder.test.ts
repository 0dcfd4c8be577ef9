import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as applyRoute from '@/app/api/topology/builder/apply/route'
import * as planRoute from '@/app/api/topology/builder/plan/route'
import type { ChannelModel, ConfirmChannel, GetMessage, Message } from '@/lib/server/platform/broker/amqplib'
import { connect } from '@/lib/server/platform/broker/amqplib'
import { applyTopology } from '@/lib/server/topology/builder/apply-topology'
import { planTopologyApply } from '@/lib/server/topology/builder/plan-topology-apply'
import type { BuilderPlanDto, TopologyApplyDto } from '@/lib/shared/topology/builder-api'
import { vhostDefinitionsSchema, type VhostDefinitions } from '@/lib/shared/topology/definitions'
import { buildThreeTier, type ThreeTierSpecInput } from '@/lib/shared/topology/three-tier'
import { createTestUser, type TestUser } from '../helpers/auth'
import { waitFor } from '../helpers/broker'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { management, managementJson } from '../helpers/management'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { createTestVhost, type TestVhost } from '../helpers/topology-vhost'

/* The three-tier builder against the real broker (docs/topology-builder.md): apply, the retry loop, the dry run. */

const TIERS = [100, 200, 300]
const SPEC: ThreeTierSpecInput = { name: 'orders', routingKeys: ['order.created', 'order.shipped'], retryDelaysMs: TIERS, dlqMaxLength: 10_000 }

type Death = { queue: string; reason: string; count: number; 'routing-keys': string[] }
const deathsOf = (m: Message) => (m.properties.headers?.['x-death'] ?? []) as Death[]

/** The management API's view of a vhost's objects, in the definitions format, sorted so two vhosts compare. */
async function objectsOf(vhost: string): Promise<Omit<VhostDefinitions, 'rabbit_version' | 'parameters'>> {
  const d = vhostDefinitionsSchema.parse(await managementJson(`/api/definitions/${encodeURIComponent(vhost)}`))
  const sorted = <T>(items: T[]) => items.map((i) => JSON.stringify(i)).sort().map((i) => JSON.parse(i) as T)
  return { policies: d.policies, queues: sorted(d.queues), exchanges: sorted(d.exchanges), bindings: sorted(d.bindings) }
}

async function openVhost(vhost: TestVhost): Promise<ChannelModel> {
  const connection = await connect(vhost.amqpUrl)
  connection.on('error', () => {})
  return connection
}

/**
 * The consumer the builder's rule describes, failing every message: nack (requeue=false) until x-death shows the last
 * tier, then a copy with the failure to the parking exchange, acked once confirmed. Counts deliveries per message id.
 */
async function failingConsumer(connection: ChannelModel, deliveries: Map<string, number>): Promise<ConfirmChannel> {
  const { consumerRule } = buildThreeTier(SPEC)
  const ch = await connection.createConfirmChannel()
  await ch.consume(consumerRule.workQueue, (m) => {
    if (!m) return
    const id = String(m.properties.messageId)
    deliveries.set(id, (deliveries.get(id) ?? 0) + 1)
    const passedLastTier = deathsOf(m).some((d) => d.queue === consumerRule.lastDelayQueue && d.reason === 'expired' && d.count >= 1)
    if (!passedLastTier) return ch.nack(m, false, false)
    const headers = { ...m.properties.headers, 'x-error-type': 'TestFailure' }
    ch.publish(consumerRule.parkingExchange, m.fields.routingKey, m.content, { ...m.properties, headers }, (err) => (err ? ch.nack(m, false, false) : ch.ack(m)))
  })
  return ch
}

async function drain(connection: ChannelModel, queue: string, expected: number): Promise<GetMessage[]> {
  const ch = await connection.createChannel()
  const messages: GetMessage[] = []
  await waitFor(async () => (await ch.checkQueue(queue)).messageCount >= expected, { timeoutMs: 30_000, what: `${expected} messages in ${queue}` })
  for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true })) messages.push(m)
  await ch.close()
  return messages
}

describe('the three-tier builder on a fresh vhost', () => {
  let db: TestDb
  let vhost: TestVhost
  let connection: ChannelModel
  let applied: TopologyApplyDto

  beforeAll(async () => {
    db = await createTestDb()
    vhost = await createTestVhost('builder')
    applied = await applyTopology({ db, vhost: vhost.name, spec: SPEC, actor: 'builder-test' })
    connection = await openVhost(vhost)
  })
  afterAll(async () => {
    await connection?.close().catch(() => {})
    await vhost?.remove()
    await db?.drop()
  })

  it('declares every object and records who applied what', async () => {
    const { objects } = buildThreeTier(SPEC)
    expect(applied.created.map((o) => o.id)).toEqual(objects.map((o) => o.id))
    const { queues, exchanges } = await objectsOf(vhost.name)
    expect(queues.map((q) => q.name).sort()).toEqual(['orders.dlq', 'orders.retry.100ms', 'orders.retry.200ms', 'orders.retry.300ms', 'orders.work'])
    expect(exchanges.map((x) => x.name).sort()).toEqual(['orders', 'orders.dead', 'orders.retry', 'orders.return'])
    const types = await managementJson<{ name: string; type: string }[]>(`/api/queues/${encodeURIComponent(vhost.name)}?columns=name,type`)
    expect(new Set(types.map((q) => q.type))).toEqual(new Set(['quorum']))

    const { rows } = await db.sql.query<{ actor: string; action: string; subject_type: string; subject_id: string; outcome: string; details: { created: string[] } }>(
      `SELECT actor, action, subject_type, subject_id, outcome, details FROM audit_log WHERE id = $1`,
      [applied.auditId],
    )
    expect(rows[0]).toMatchObject({ actor: 'builder-test', action: 'topology.applied', subject_type: 'vhost', subject_id: vhost.name, outcome: 'applied' })
    expect(rows[0]!.details.created).toContain('queue orders.work')
    expect(rows[0]!.details.created).toHaveLength(objects.length)
  })

  it('says everything is unchanged when planned again, and applying again declares nothing', async () => {
    const plan = await planTopologyApply({ vhost: vhost.name, spec: SPEC })
    expect(plan.counts).toEqual({ create: 0, unchanged: buildThreeTier(SPEC).objects.length, conflict: 0 })
    expect(plan.canApply).toBe(true)
    const again = await applyTopology({ db, vhost: vhost.name, spec: SPEC, actor: 'builder-test' })
    expect(again.created).toEqual([])
  })

  it('runs the loop: a failing consumer escalates each message through every tier into the DLQ', async () => {
    const deliveries = new Map<string, number>()
    const consumer = await failingConsumer(connection, deliveries)
    const publisher = await connection.createConfirmChannel()
    const ids = ['m1', 'm2', 'm3', 'm4']
    for (const [i, id] of ids.entries()) publisher.publish('orders', i % 2 ? 'order.shipped' : 'order.created', Buffer.from(id), { messageId: id, persistent: true })
    await publisher.waitForConfirms()

    const parked = await drain(connection, 'orders.dlq', ids.length)
    await consumer.close()
    await publisher.close()
    expect(parked.map((m) => m.properties.messageId).sort()).toEqual(ids)
    for (const m of parked) {
      const deaths = deathsOf(m)
      const count = (queue: string, reason: string) => deaths.find((d) => d.queue === queue && d.reason === reason)?.count
      expect(count('orders.work', 'rejected'), m.properties.messageId).toBe(TIERS.length)
      for (const tier of ['orders.retry.100ms', 'orders.retry.200ms', 'orders.retry.300ms']) expect(count(tier, 'expired'), tier).toBe(1)
      expect(deaths).toHaveLength(1 + TIERS.length)
      // The producer's key survives in the work queue's entry, though each return carries the tier's name.
      const ownKey = Number(m.properties.messageId.slice(1)) % 2 ? 'order.created' : 'order.shipped'
      expect(deaths.find((d) => d.queue === 'orders.work')!['routing-keys']).toEqual([ownKey])
      expect(m.fields.routingKey).toBe('orders.retry.300ms')
      expect(m.properties.headers?.['x-error-type']).toBe('TestFailure')
      expect(deliveries.get(m.properties.messageId)).toBe(TIERS.length + 1)
    }
    for (const queue of ['orders.work', 'orders.retry.100ms', 'orders.retry.200ms', 'orders.retry.300ms']) {
      const ch = await connection.createChannel()
      expect((await ch.checkQueue(queue)).messageCount, queue).toBe(0)
      await ch.close()
    }
  })

  it('parks a nack after the last tier in the DLQ too, so a consumer that ignores the rule cannot loop', async () => {
    const ch = await connection.createConfirmChannel()
    await ch.consume('orders.work', (m) => m && ch.nack(m, false, false))
    ch.publish('orders', 'order.created', Buffer.from('stubborn'), { messageId: 'stubborn' })
    await ch.waitForConfirms()
    const [m] = await drain(connection, 'orders.dlq', 1)
    await ch.close()
    expect(m!.properties.messageId).toBe('stubborn')
    expect(deathsOf(m!).find((d) => d.queue === 'orders.work')!.count).toBe(TIERS.length + 1)
  })

  it('parks a dead letter with a key nothing binds through the alternate exchange', async () => {
    const ch = await connection.createConfirmChannel()
    ch.publish('orders.retry', 'no.such.key', Buffer.from('stray'), { messageId: 'stray' })
    ch.publish('orders.return', 'no.such.key', Buffer.from('stray2'), { messageId: 'stray2' })
    await ch.waitForConfirms()
    await ch.close()
    const parked = await drain(connection, 'orders.dlq', 2)
    expect(parked.map((m) => m.properties.messageId).sort()).toEqual(['stray', 'stray2'])
  })
})

describe('the builder refuses to change what exists', () => {
  let db: TestDb
  let vhost: TestVhost

  beforeAll(async () => {
    db = await createTestDb()
    vhost = await createTestVhost('builder_conflict')
    const connection = await openVhost(vhost)
    const ch = await connection.createChannel()
    // A work queue declared by hand earlier: classic, dead-lettering somewhere else.
    await ch.assertQueue('orders.work', { durable: true, arguments: { 'x-dead-letter-exchange': 'elsewhere' } })
    await ch.assertExchange('orders.retry', 'topic', { durable: true, arguments: { 'alternate-exchange': 'orders.dead' } })
    await connection.close()
  })
  afterAll(async () => {
    await vhost?.remove()
    await db?.drop()
  })

  it('plans a conflict naming each difference, and an existing identical object as unchanged', async () => {
    const plan = await planTopologyApply({ vhost: vhost.name, spec: SPEC })
    expect(plan.canApply).toBe(false)
    const work = plan.items.find((i) => i.object.id === 'queue:orders.work')!
    expect(work.action).toBe('conflict')
    expect(work.differences).toEqual([
      { field: 'type', existing: 'classic', wanted: 'quorum' },
      { field: 'arguments.x-dead-letter-exchange', existing: 'elsewhere', wanted: 'orders.retry' },
      { field: 'arguments.x-dead-letter-strategy', existing: null, wanted: 'at-least-once' },
      { field: 'arguments.x-overflow', existing: null, wanted: 'reject-publish' },
    ])
    expect(plan.items.find((i) => i.object.id === 'exchange:orders.retry')!.action).toBe('unchanged')
    expect(plan.counts).toMatchObject({ conflict: 1, unchanged: 1 })
  })

  it('does not apply, declares nothing, and says why', async () => {
    const before = await objectsOf(vhost.name)
    await expect(applyTopology({ db, vhost: vhost.name, spec: SPEC, actor: 'builder-test' })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('queue orders.work exists with other settings (type, arguments.x-dead-letter-exchange'),
    })
    expect(await objectsOf(vhost.name)).toEqual(before)
    expect((await db.sql.query(`SELECT 1 FROM audit_log WHERE action = 'topology.applied'`)).rows).toEqual([])
  })

  it('answers not found for a vhost that does not exist', async () => {
    await expect(planTopologyApply({ vhost: `${vhost.name}_missing`, spec: SPEC })).rejects.toMatchObject({ code: 'not_found' })
  })
})

describe('a declaration the broker refuses half-way', () => {
  let db: TestDb
  let vhost: TestVhost

  beforeAll(async () => {
    db = await createTestDb()
    vhost = await createTestVhost('builder_partial')
    // AMQP_URL's user may configure everything but the work queue: apply gets that far, then the broker refuses.
    const narrowed = await management('PUT', `/api/permissions/${encodeURIComponent(vhost.name)}/guest`, { configure: '^(?!orders\\.work$).*', write: '.*', read: '.*' })
    expect(narrowed.ok).toBe(true)
  })
  afterAll(async () => {
    await vhost?.remove()
    await db?.drop()
  })

  it('keeps what was declared, audits it as refused, and says which object failed', async () => {
    await expect(applyTopology({ db, vhost: vhost.name, spec: SPEC, actor: 'builder-test' })).rejects.toMatchObject({
      code: 'unprocessable',
      message: expect.stringContaining('The broker refused queue orders.work after 9 objects were declared'),
    })
    const { rows } = await db.sql.query<{ outcome: string; summary: string; details: { created: string[] } }>(`SELECT outcome, summary, details FROM audit_log WHERE action = 'topology.applied'`)
    expect(rows).toHaveLength(1)
    expect(rows[0]!.outcome).toMatch(/^refused: .*ACCESS_REFUSED/)
    expect(rows[0]!.summary).toContain('in part: 9 of')
    expect(rows[0]!.details.created).toEqual(buildThreeTier(SPEC).objects.slice(0, 9).map((o) => (o.kind === 'binding' ? `binding ${o.source} → ${o.destination} "${o.routingKey}"` : `${o.kind} ${o.name}`)))

    const plan = await planTopologyApply({ vhost: vhost.name, spec: SPEC })
    // Everything after the refused queue was never sent; a second apply (with the permission) declares just that.
    expect(plan.items.map((i) => i.action)).toEqual(buildThreeTier(SPEC).objects.map((_, i) => (i < 9 ? 'unchanged' : 'create')))
  })
})

describe('the definitions file and the rabbitmqadmin commands make what apply makes', () => {
  let db: TestDb
  const vhosts: TestVhost[] = []

  beforeAll(async () => {
    db = await createTestDb()
  })
  afterAll(async () => {
    for (const v of vhosts) await v.remove()
    await db?.drop()
  })

  it('the same objects, whichever way they were declared', async () => {
    const [viaApply, viaImport, viaCommands] = [await createTestVhost('builder_apply'), await createTestVhost('builder_import'), await createTestVhost('builder_cli')]
    vhosts.push(viaApply, viaImport, viaCommands)
    const name = `it's a "spaced" name`
    const spec = { ...SPEC, name, routingKeys: ['order.created', `odd key's`] }
    await applyTopology({ db, vhost: viaApply.name, spec, actor: 'builder-test' })

    const imported = await management('POST', `/api/definitions/${encodeURIComponent(viaImport.name)}`, buildThreeTier(spec).definitions)
    expect(imported.status, await imported.text()).toBeLessThan(300)

    for (const command of buildThreeTier(spec, { vhost: viaCommands.name }).commands) {
      const run = spawnSync('bash', ['-c', command], { encoding: 'utf8', timeout: 30_000 })
      expect(run.status, `${command}\n${run.stderr}`).toBe(0)
    }

    const expected = await objectsOf(viaApply.name)
    expect(expected.queues).toHaveLength(5)
    expect(expected.queues.map((q) => q.name)).toContain(`${name}.work`)
    expect(await objectsOf(viaImport.name)).toEqual(expected)
    expect(await objectsOf(viaCommands.name)).toEqual(expected)
    expect((await planTopologyApply({ vhost: viaImport.name, spec })).counts.create).toBe(0)
  })
})

describe('POST /api/topology/builder/plan and /apply', () => {
  let db: TestDb
  let vhost: TestVhost
  let viewer: TestUser
  let operator: TestUser
  let admin: TestUser

  const call = async (module: RouteModule, path: string, user: TestUser, body: unknown) =>
    callRoute(
      module,
      'POST',
      new Request(`http://lazarus.test${path}`, { method: 'POST', headers: { authorization: user.authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    )

  beforeAll(async () => {
    db = await createTestDb()
    vhost = await createTestVhost('builder_routes')
    viewer = await createTestUser(db, 'builder-viewer', [{ role: 'viewer' }])
    operator = await createTestUser(db, 'builder-operator', [{ role: 'operator' }])
    admin = await createTestUser(db, 'builder-admin', [{ role: 'admin' }])
  })
  afterAll(async () => {
    await vhost?.remove()
    await db?.drop()
  })

  it('a viewer gets the declarations and the dry run', async () => {
    const response = await call(planRoute, '/api/topology/builder/plan', viewer, { vhost: vhost.name, spec: SPEC })
    expect(response.status).toBe(200)
    const body = (await response.json()) as BuilderPlanDto
    expect(vhostDefinitionsSchema.parse(body.definitions).queues).toHaveLength(5)
    expect(body.commands[0]).toContain(`--vhost=${vhost.name}`)
    expect(body.consumerRule.parkingExchange).toBe('orders.dead')
    expect(body.plan.counts).toEqual({ create: body.plan.items.length, unchanged: 0, conflict: 0 })
  })

  it('refuses an invalid spec with the field that is wrong', async () => {
    const response = await call(planRoute, '/api/topology/builder/plan', viewer, { vhost: vhost.name, spec: { ...SPEC, retryDelaysMs: [300, 100] } })
    expect(response.status).toBe(400)
    expect(await response.text()).toContain('retry delays must be strictly increasing')
  })

  it('an operator may not apply; an admin applies, once confirmed', async () => {
    expect((await call(applyRoute, '/api/topology/builder/apply', operator, { vhost: vhost.name, spec: SPEC, confirm: true })).status).toBe(403)
    expect((await call(applyRoute, '/api/topology/builder/apply', admin, { vhost: vhost.name, spec: SPEC })).status).toBe(400)
    expect((await objectsOf(vhost.name)).queues).toEqual([])

    const response = await call(applyRoute, '/api/topology/builder/apply', admin, { vhost: vhost.name, spec: SPEC, confirm: true })
    expect(response.status).toBe(201)
    expect(((await response.json()) as TopologyApplyDto).created).toHaveLength(buildThreeTier(SPEC).objects.length)
    expect((await objectsOf(vhost.name)).queues).toHaveLength(5)
    const { rows } = await db.sql.query<{ actor: string }>(`SELECT actor FROM audit_log WHERE action = 'topology.applied'`)
    expect(rows).toEqual([{ actor: admin.actor }])
  })
})
