import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
// First: the doctor's modules (the traps' tests) load amqplib through this, which patches its header codec before
// anything loads amqplib; the demo's plain amqplib then decodes as it always does.
import '@/lib/server/platform/broker/amqplib'
import amqp, { type ChannelModel, type ConsumeMessage } from 'amqplib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { failsAgain } from '@/lib/demo/replayed'
import { allocate, formatSummary, runSeed, type SeedResult } from '@/lib/demo/seed'
import { deleteAppTopology } from '@/lib/demo/topology'
import { deleteDemoTraps, TRAP_LABEL } from '@/lib/demo/traps'
import { readBrokerSnapshot } from '@/lib/server/topology/broker-snapshot'
import { diagnose } from '@/lib/server/topology/diagnose'
import { emptyEvidence } from '@/lib/server/topology/topology-evidence'
import { RABBITMQ_FINDING_KINDS, type FindingKind } from '@/lib/shared/schemas/topology'
import { createTestVhost, type TestVhost } from '../helpers/topology-vhost'

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const UNREACHABLE_URL = 'amqp://guest:guest@127.0.0.1:1'
const COUNT = 120
const ROOT = path.resolve(import.meta.dirname, '../..')

/** Framework detection in the order of docs/framework-headers.md#detection-order, reduced to what the seed produces. */
function styleOf(msg: ConsumeMessage): string {
  const h = msg.properties.headers ?? {}
  if ('NServiceBus.ExceptionInfo.ExceptionType' in h || 'NServiceBus.FailedQ' in h) return 'nservicebus'
  if ('MT-Fault-ExceptionType' in h || 'MT-Reason' in h) return 'masstransit'
  if ('x-exception-stacktrace' in h || 'x-original-exchange' in h) return 'spring'
  if ('rbs2-error-details' in h) return 'rebus'
  if (msg.properties.type === 'EasyNetQ.SystemMessages.Error, EasyNetQ') return 'easynetq'
  if ('x-error-type' in h) return 'lazarus'
  return 'plain-dlx'
}

type Death = { queue: string; reason: string; count: number }

const deathsOf = (msg: ConsumeMessage): Death[] => (msg.properties.headers?.['x-death'] as Death[] | undefined) ?? []

function isJson(msg: ConsumeMessage): boolean {
  try {
    JSON.parse(msg.content.toString('utf8'))
    return true
  } catch {
    return false
  }
}

const isValidUtf8 = (body: Buffer) => Buffer.from(body.toString('utf8'), 'utf8').equals(body)

async function consumeAll(connection: ChannelModel, queue: string, expected: number): Promise<ConsumeMessage[]> {
  const ch = await connection.createChannel()
  const messages: ConsumeMessage[] = []
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`got ${messages.length} of ${expected} messages from ${queue}`)), 10_000)
      void ch.consume(
        queue,
        (msg) => {
          if (msg) messages.push(msg)
          if (messages.length < expected) return
          clearTimeout(timer)
          resolve()
        },
        { noAck: true },
      )
    })
  } finally {
    await ch.close()
  }
  return messages
}

describe('demo seed (lib/demo/seed.ts) against the local broker', () => {
  const prefix = `test-seed-${randomBytes(4).toString('hex')}`
  let connection: ChannelModel
  let result: SeedResult

  beforeAll(async () => {
    connection = await amqp.connect(AMQP_URL)
    result = await runSeed({ amqpUrl: AMQP_URL, prefix, count: COUNT, fast: true })
  })

  afterAll(async () => {
    for (const topology of result?.topologies ?? []) await deleteAppTopology(connection, topology)
    if (result) await deleteDemoTraps(connection, result.traps)
    await connection?.close()
  })

  it('puts exactly the planned dead letters in each terminal DLQ and names them for LAZARUS_SOURCES', async () => {
    const dlqs = [`${prefix}.orders.dlq`, `${prefix}.billing.dlq`, `${prefix}.search-indexer.dlq`]
    expect(result.dlqs.map((d) => d.queue)).toEqual(dlqs)
    expect(result.lazarusSources).toBe(dlqs.join(','))
    expect(result.dlqs.reduce((sum, d) => sum + d.added, 0)).toBe(COUNT)

    const ch = await connection.createChannel()
    for (const dlq of result.dlqs) {
      expect(dlq.added).toBeGreaterThan(0)
      expect((await ch.checkQueue(dlq.queue)).messageCount, dlq.queue).toBe(dlq.added)
    }
    // Nothing is left going round the retry loop.
    for (const t of result.topologies) {
      for (const queue of [t.workQueue, t.retryQueues.short.queue, t.retryQueues.long.queue]) {
        expect((await ch.checkQueue(queue)).messageCount, queue).toBe(0)
      }
    }
    await ch.close()
  })

  it('mixes dead-letter reasons, framework styles and body encodings', async () => {
    const messages = (
      await Promise.all(result.dlqs.map((dlq) => consumeAll(connection, dlq.queue, dlq.added)))
    ).flat()
    expect(messages).toHaveLength(COUNT)

    const reasons = new Set(messages.flatMap((m) => deathsOf(m).map((d) => d.reason)))
    expect([...reasons]).toEqual(expect.arrayContaining(['rejected', 'expired', 'maxlen']))

    const styles = new Set(messages.map(styleOf))
    styles.delete('plain-dlx')
    expect(styles.size).toBeGreaterThanOrEqual(4)

    expect(messages.some((m) => m.properties.contentType === 'application/json' && isJson(m))).toBe(true)
    expect(messages.some((m) => m.properties.contentType === 'application/x-protobuf')).toBe(true)
    expect(messages.some((m) => !isValidUtf8(m.content))).toBe(true)
  })
})

describe('demo seed: details a dashboard relies on', () => {
  const prefix = `test-seed-${randomBytes(4).toString('hex')}`
  let connection: ChannelModel
  let result: SeedResult
  let messages: ConsumeMessage[]

  beforeAll(async () => {
    connection = await amqp.connect(AMQP_URL)
    result = await runSeed({ amqpUrl: AMQP_URL, prefix, count: COUNT, fast: true })
    messages = (await Promise.all(result.dlqs.map((dlq) => consumeAll(connection, dlq.queue, dlq.added)))).flat()
  })

  afterAll(async () => {
    for (const topology of result?.topologies ?? []) await deleteAppTopology(connection, topology)
    if (result) await deleteDemoTraps(connection, result.traps)
    await connection?.close()
  })

  it('keeps the broker-built x-death history on republished copies', () => {
    const copies = messages.filter((m) => ['spring', 'nservicebus', 'rebus', 'masstransit'].includes(styleOf(m)))
    const retried = copies.filter((m) => deathsOf(m).some((d) => d.reason === 'rejected' && d.queue.endsWith('.work')))
    expect(retried.length).toBeGreaterThan(0)
    for (const m of retried) {
      const work = deathsOf(m).find((d) => d.reason === 'rejected' && d.queue.endsWith('.work'))!
      expect(deathsOf(m).some((d) => d.reason === 'expired' && d.queue.includes('.retry.'))).toBe(true)
      expect(work.count).toBeGreaterThanOrEqual(1)
    }
  })

  it('carries message ids, entity correlation ids, app ids and failure headers', () => {
    const business = messages.filter((m) => styleOf(m) !== 'easynetq')
    for (const m of business) {
      expect(m.properties.messageId).toEqual(expect.any(String))
      expect(m.properties.correlationId).toMatch(/^(order|inv|doc)-/)
      expect(m.properties.appId).toEqual(expect.any(String))
    }
    expect(business.some((m) => m.properties.headers?.['x-entity-key'] === m.properties.correlationId)).toBe(true)

    const lazarus = messages.filter((m) => styleOf(m) === 'lazarus')
    expect(lazarus.every((m) => m.properties.headers?.['x-service-version'] && m.properties.headers?.['x-error-stack'])).toBe(true)

    const spring = messages.find((m) => styleOf(m) === 'spring' && /Caused by: /.test(String(m.properties.headers?.['x-exception-stacktrace'])))
    expect(spring).toBeDefined()
    expect(spring!.properties.headers?.['x-original-routingKey']).toBe('order.created')

    const easyNetQ = messages.find((m) => styleOf(m) === 'easynetq')
    expect(easyNetQ && JSON.parse(easyNetQ.content.toString('utf8'))).toMatchObject({ Queue: `${prefix}.billing.work`, Exception: expect.stringMatching(/^System\./) })
  })

  it('adds more dead letters when run again on the same topology', async () => {
    const again = await runSeed({ amqpUrl: AMQP_URL, prefix, count: 30, fast: true })
    expect(again.dlqs.reduce((sum, d) => sum + d.added, 0)).toBe(30)
    for (const dlq of again.dlqs) expect(dlq.depth).toBe(dlq.added) // the first run's messages were consumed above
  })
})

describe('demo seed: failure modes', () => {
  it('rejects with a clear message when the broker is unreachable', async () => {
    await expect(runSeed({ amqpUrl: UNREACHABLE_URL, prefix: 'unused', count: 1, fast: true })).rejects.toThrow(
      /Cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1/,
    )
  })

  it('exits non-zero from the command line when the broker is unreachable', () => {
    // As `npm run demo:seed` runs it.
    const run = spawnSync(process.execPath, ['--conditions=react-server', '--import', 'tsx', 'lib/demo/seed.ts', '--fast', '--count', '5'], {
      cwd: ROOT,
      env: { ...process.env, AMQP_URL: UNREACHABLE_URL },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(run.status).toBe(1)
    expect(run.stderr).toMatch(/^demo:seed: Cannot reach RabbitMQ/m)
  })

  it('splits the count by weight and gives every kind of failure at least one message', () => {
    expect(allocate(10, [5, 3, 1, 1])).toEqual([4, 3, 2, 1])
    const counts = allocate(120, [30, 6, 18, 6, 1])
    expect(counts.reduce((a, b) => a + b, 0)).toBe(120)
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(1)
    expect(allocate(2, [5, 3, 1])).toEqual([1, 1, 0]) // too few to go round: by weight alone
  })
})

describe('demo seed: messages Lazarus replayed into a work queue', () => {
  const prefix = `test-seed-${randomBytes(4).toString('hex')}`
  let connection: ChannelModel
  let first: SeedResult

  beforeAll(async () => {
    connection = await amqp.connect(AMQP_URL)
    first = await runSeed({ amqpUrl: AMQP_URL, prefix, count: 20, fast: true })
  })
  afterAll(async () => {
    for (const topology of first?.topologies ?? []) await deleteAppTopology(connection, topology)
    if (first) await deleteDemoTraps(connection, first.traps)
    await connection?.close()
  })

  it('are not swallowed as leftovers on the next run: some succeed, the same third fails again with its lineage', async () => {
    const orders = first.topologies.find((t) => t.workQueue === `${prefix}.orders.work`)!
    const dlqBefore = (await (await connection.createChannel()).checkQueue(orders.dlq)).messageCount
    // What a replay from Lazarus publishes: the original body and headers, stamped with the lineage headers.
    const replays = Array.from({ length: 12 }, (_, i) => ({ origin: String(1000 + i), replay: `r-${i}` }))
    const ch = await connection.createConfirmChannel()
    for (const r of replays) {
      ch.sendToQueue(orders.workQueue, Buffer.from(JSON.stringify({ orderId: `order-${r.origin}` })), {
        messageId: `m-${r.origin}`,
        headers: { 'x-error-type': 'com.acme.StockException', 'x-lazarus-origin-id': r.origin, 'x-lazarus-replay-id': r.replay, 'x-lazarus-replay-count': 1 },
      })
    }
    await ch.waitForConfirms()
    await ch.close()
    const failing = replays.filter((r) => failsAgain({ properties: { headers: { 'x-lazarus-origin-id': r.origin } } } as unknown as ConsumeMessage))
    expect(failing.length).toBeGreaterThan(0)
    expect(failing.length).toBeLessThan(replays.length)

    const second = await runSeed({ amqpUrl: AMQP_URL, prefix, count: 20, fast: true })
    expect(second.discardedLeftovers).toBe(0)
    expect(second).toMatchObject({ replaysFailedAgain: failing.length, replaysSucceeded: replays.length - failing.length })
    expect(formatSummary(second)).toContain(`Handled 12 replayed messages: ${replays.length - failing.length} succeeded, ${failing.length} failed again.`)

    const inDlq = await consumeAll(connection, orders.dlq, dlqBefore + second.dlqs.find((d) => d.queue === orders.dlq)!.added + failing.length)
    const again = inDlq.filter((m) => m.properties.headers?.['x-lazarus-origin-id'] !== undefined)
    expect(again.map((m) => String(m.properties.headers?.['x-lazarus-origin-id'])).sort()).toEqual(failing.map((r) => r.origin).sort())
    expect(again.every((m) => m.properties.headers?.['x-lazarus-replay-id'] !== undefined && m.properties.headers?.['x-death'] === undefined)).toBe(true)
  })
})

/** Kinds no declaration shows: they need a connected consumer, traffic, or letters Lazarus has stored. */
const NOT_FROM_DECLARATIONS: FindingKind[] = ['no-dlx', 'requeue-to-head', 'retry-count-high', 'delay-mixed-ttl', 'message-near-size-limit', 'unknown-x-death-queue']

describe('demo seed: a deliberate trap for each kind of finding the topology doctor sees in declarations', () => {
  let vhost: TestVhost
  let result: SeedResult

  beforeAll(async () => {
    // A vhost of its own: the doctor reads all of it, so what it finds is the demo's and nothing else's.
    vhost = await createTestVhost('demo_traps')
    result = await runSeed({ amqpUrl: vhost.amqpUrl, prefix: 'demo', count: 30, fast: true })
  })
  afterAll(async () => vhost?.remove())

  const doctor = async () =>
    diagnose({
      snapshot: await readBrokerSnapshot({ vhost: vhost.name }),
      evidence: emptyEvidence(),
      // As Lazarus runs the demo: draining the DLQs the seed prints for LAZARUS_SOURCES.
      sources: result.lazarusSources.split(',').map((queue, i) => ({ id: String(i + 1), queue })),
    })

  it('finds exactly one finding of each trap kind, on that trap’s objects, and nothing in the demo apps', async () => {
    expect(result.traps.map((t) => t.kind).sort()).toEqual(RABBITMQ_FINDING_KINDS.filter((k) => !NOT_FROM_DECLARATIONS.includes(k)).sort())
    const diagnosis = await doctor()
    const found = diagnosis.findings.map((f) => [f.kind, f.objects.map((o) => o.name)] as const)
    expect(found.map(([kind]) => kind).sort()).toEqual(result.traps.map((t) => t.kind).sort())
    for (const [kind, objects] of found) {
      expect(objects.length, kind).toBeGreaterThan(0)
      for (const name of objects) expect(name, kind).toMatch(new RegExp(`^demo\\.trap\\.${kind}(\\.|$)`))
    }
    // The page's check lines agree: each trap's rule raised exactly one.
    for (const trap of result.traps) expect(diagnosis.checks.find((c) => c.kind === trap.kind)?.raised, trap.kind).toBe(1)
  })

  it('labels every trap object as deliberate, and says so in the summary', async () => {
    const snapshot = await readBrokerSnapshot({ vhost: vhost.name })
    const trapObjects = [...snapshot.queues, ...snapshot.exchanges].filter((o) => o.name.startsWith('demo.trap.'))
    expect(trapObjects.length).toBe(result.traps.reduce((n, t) => n + t.queues.length + t.exchanges.length, 0))
    for (const o of trapObjects) expect(String(o.arguments[TRAP_LABEL]), o.name).toMatch(/^deliberate trap for the topology doctor \([a-z-]+\): /)
    // No trap object outside its own names, and no demo app object labelled as a trap.
    for (const o of [...snapshot.queues, ...snapshot.exchanges].filter((x) => !x.name.startsWith('demo.trap.'))) expect(o.arguments[TRAP_LABEL], o.name).toBeUndefined()
    expect(formatSummary(result)).toContain(`Declared ${result.traps.length} deliberate traps under demo.trap.*`)
  })

  it('declares the traps again without conflict on the next run, and they still raise one finding each', async () => {
    const again = await runSeed({ amqpUrl: vhost.amqpUrl, prefix: 'demo', count: 10, fast: true })
    expect(again.traps.map((t) => t.kind)).toEqual(result.traps.map((t) => t.kind))
    expect((await doctor()).findings.map((f) => f.kind).sort()).toEqual(result.traps.map((t) => t.kind).sort())
  })
})

