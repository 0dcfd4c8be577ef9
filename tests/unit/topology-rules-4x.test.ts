import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseSnapshot, queuesListPath, type ManagementAnswers } from '@/lib/server/topology/broker-snapshot'
import { diagnose } from '@/lib/server/topology/diagnose'
import { emptyEvidence } from '@/lib/server/topology/topology-evidence'
import { RABBITMQ_FINDING_KINDS } from '@/lib/shared/schemas/topology'
import { buildThreeTier } from '@/lib/shared/topology/three-tier'

// Management API answers written by hand in the 4.x shape (each fixture says so in its `_comment`): no 4.x broker runs here.
function fixture(name: string): ManagementAnswers & { _comment: string } {
  return JSON.parse(readFileSync(path.join(import.meta.dirname, '../fixtures/topology', name), 'utf8'))
}

describe('the doctor on RabbitMQ 4.x answers', () => {
  it('reads queues from /api/queues/detailed on 3.13 and later', () => {
    expect(queuesListPath('3.10.8')).toBe('/api/queues')
    expect(queuesListPath('3.13.0')).toBe('/api/queues/detailed')
    expect(queuesListPath('4.1.4')).toBe('/api/queues/detailed')
  })

  it('finds a quorum queue that drops messages at the default delivery limit of 20', () => {
    const answers = fixture('rabbitmq-4x-quorum-delivery-limit.json')
    expect(answers._comment).toMatch(/by hand in the shape of RabbitMQ 4\.x/)
    const snapshot = parseSnapshot('orders', answers)
    expect(snapshot.brokerVersion).toBe('4.1.4')
    const diagnosis = diagnose({ snapshot, evidence: emptyEvidence(), sources: [] })
    expect(diagnosis.findings.map((f) => [f.kind, f.objects.map((o) => o.name)])).toEqual([['quorum-delivery-limit-no-dlx', ['payments']]])
    const [found] = diagnosis.findings
    expect(found.severity).toBe('error')
    expect(found.title).toContain('after 20 deliveries')
    expect(found.evidence).toContainEqual({ label: 'delivery-limit', value: '20 (default)' })
    expect(found.key).toBe('quorum-delivery-limit-no-dlx|orders|queue:payments')
    const node = diagnosis.nodes.find((n) => n.id === 'q:payments')
    expect(node).toMatchObject({ type: 'queue', queueType: 'quorum', role: 'work', severity: 'error' })
  })

  it('does not assume the 4.x default on a 3.x quorum queue', () => {
    const answers = fixture('rabbitmq-4x-quorum-delivery-limit.json')
    const snapshot = { ...parseSnapshot('orders', answers), brokerVersion: '3.13.7' }
    const diagnosis = diagnose({ snapshot, evidence: emptyEvidence(), sources: [] })
    // Without a delivery limit a 3.x quorum queue keeps redelivering; what remains is a consumed queue with no DLX.
    expect(diagnosis.findings.map((f) => [f.kind, f.objects.map((o) => o.name)])).toEqual([['no-dlx', ['payments']]])
  })

  it('finds stored letters near 4.x\'s 16 MiB max message size, and not under 3.x\'s 128 MiB', () => {
    const snapshot = parseSnapshot('orders', fixture('rabbitmq-4x-three-tier.json'))
    const evidence = { ...emptyEvidence(), sources: [{ sourceId: '7', queue: 'orders.dlq', letters: 3, deathQueues: ['orders.work'], nearSizeLetters: 1, largestBody: 15_500_000 }] }
    const on4 = diagnose({ snapshot, evidence, sources: [{ id: '7', queue: 'orders.dlq' }] })
    expect(on4.findings.map((f) => [f.kind, f.objects.map((o) => o.name), f.messagesQuery])).toEqual([['message-near-size-limit', ['orders.dlq'], 'source=7']])
    const on3 = diagnose({ snapshot: { ...snapshot, brokerVersion: '3.12.14' }, evidence, sources: [{ id: '7', queue: 'orders.dlq' }] })
    expect(on3.findings.filter((f) => f.kind === 'message-near-size-limit')).toEqual([])
  })

  it('finds nothing in a correct three-tier topology, and says what it checked', () => {
    const snapshot = parseSnapshot('orders', fixture('rabbitmq-4x-three-tier.json'))
    const diagnosis = diagnose({ snapshot, evidence: emptyEvidence(), sources: [{ id: '7', queue: 'orders.dlq' }] })
    expect(diagnosis.findings).toEqual([])
    expect(new Set(diagnosis.checks.map((c) => c.kind))).toEqual(new Set(RABBITMQ_FINDING_KINDS))
    expect(diagnosis.checks.find((c) => c.kind === 'retry-loop-no-exit')).toMatchObject({ checked: 3, raised: 0 })
    const roles = Object.fromEntries(diagnosis.nodes.flatMap((n) => (n.type === 'queue' ? [[n.name, n.role]] : [])))
    expect(roles).toEqual({ 'orders.work': 'work', 'orders.retry.30s': 'delay', 'orders.dlq': 'dlq' })
    const dlq = diagnosis.nodes.find((n) => n.id === 'q:orders.dlq')
    expect(dlq?.type === 'queue' && dlq.settings.find((s) => s.key === 'max-length')).toEqual({ key: 'max-length', value: 100_000, from: 'policy', policy: 'dlq-limits' })
    expect(diagnosis.edges).toContainEqual({ id: 'd:q:orders.work', from: 'q:orders.work', to: 'x:orders.retry', kind: 'dead-letter', routingKey: null })
    expect(diagnosis.edges).toContainEqual({ id: 'a:x:orders.retry', from: 'x:orders.retry', to: 'x:orders.parking', kind: 'alternate', routingKey: null })
  })
})

describe("the builder's topology on RabbitMQ 4.x", () => {
  // The builder's definitions turned into management API answers in the 4.x shape (by hand: no 4.x broker runs here).
  const answersFor = (brokerVersion: string): ManagementAnswers => {
    const { definitions, names } = buildThreeTier({ name: 'orders', routingKeys: ['order.created'], retryDelaysMs: [30_000, 300_000] }, { brokerVersion })
    return {
      overview: { rabbitmq_version: '4.1.4' },
      queues: definitions.queues.map((q) => ({
        name: q.name,
        type: q.arguments['x-queue-type'] ?? 'classic',
        durable: q.durable,
        auto_delete: q.auto_delete,
        exclusive: false,
        arguments: q.arguments,
        policy: null,
        operator_policy: null,
        effective_policy_definition: {},
        messages: 0,
        consumers: q.name === names.workQueue ? 1 : 0,
      })),
      exchanges: definitions.exchanges.map((x) => ({ name: x.name, type: x.type, durable: x.durable, auto_delete: x.auto_delete, internal: x.internal, arguments: x.arguments })),
      bindings: definitions.bindings.map((b) => ({ source: b.source, destination: b.destination, destination_type: b.destination_type, routing_key: b.routing_key, arguments: b.arguments })),
      policies: [],
      operatorPolicies: [],
    }
  }
  const diagnoseOn4 = (builtFor: string) =>
    diagnose({ snapshot: parseSnapshot('orders', answersFor(builtFor)), evidence: emptyEvidence(), sources: [{ id: '1', queue: 'orders.dlq' }] })

  it('built for 4.x, it is clean: the DLQ has no delivery limit', () => {
    expect(diagnoseOn4('4.1.4').findings).toEqual([])
  })

  it('built for 3.x and run on 4.x, the DLQ would drop letters a drainer returns 20 times', () => {
    expect(diagnoseOn4('3.10.8').findings.map((f) => [f.kind, f.objects.map((o) => o.name)])).toEqual([['quorum-delivery-limit-no-dlx', ['orders.dlq']]])
  })
})
