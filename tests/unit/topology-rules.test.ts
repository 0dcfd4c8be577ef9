import { describe, expect, it } from 'vitest'
import { diagnose, focusOnQueue } from '@/lib/server/topology/diagnose'
import { emptyEvidence } from '@/lib/server/topology/topology-evidence'
import { snapBinding, snapExchange, snapPolicy, snapQueue, snapshotOf } from '../helpers/topology-snapshot'

const bounded = { 'x-max-length': 100, 'x-overflow': 'reject-publish' }
const run = (parts: Parameters<typeof snapshotOf>[0], sources: { id: string; queue: string }[] = []) => diagnose({ snapshot: snapshotOf(parts), evidence: emptyEvidence(), sources })
const kindsOf = (d: ReturnType<typeof diagnose>) => d.findings.map((f) => [f.kind, f.objects.map((o) => o.name)])

describe('doctor rules on hand-built 3.x snapshots', () => {
  it('says routing is unknown behind a headers DLX', () => {
    const d = run({
      exchanges: [snapExchange('app'), snapExchange('dlx', 'headers')],
      queues: [snapQueue('work', { arguments: { 'x-dead-letter-exchange': 'dlx' } }), snapQueue('dlq', { arguments: bounded })],
      bindings: [snapBinding('app', 'work', 'k'), snapBinding('dlx', 'dlq', '')],
    })
    expect(kindsOf(d)).toEqual([['dlx-routing-unknown', ['work', 'dlx']]])
    expect(d.findings[0].severity).toBe('info')
  })

  it('says routing is unknown when only some keys of a wildcard binding are bound on the DLX', () => {
    const d = run({
      exchanges: [snapExchange('app', 'topic'), snapExchange('dlx', 'direct')],
      queues: [snapQueue('work', { arguments: { 'x-dead-letter-exchange': 'dlx' } }), snapQueue('dlq', { arguments: bounded })],
      bindings: [snapBinding('app', 'work', 'order.*'), snapBinding('dlx', 'dlq', 'order.created')],
    })
    expect(kindsOf(d)).toEqual([['dlx-routing-unknown', ['work', 'dlx']]])
    expect(d.findings[0].evidence).toContainEqual({ label: 'keys matching "order.*" route to', value: 'dlq (some keys: nothing)' })
  })

  it('routes dead letters to the default exchange by the dead-letter routing key', () => {
    const parts = (key: string) => ({
      exchanges: [snapExchange('app')],
      queues: [snapQueue('work', { arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': key } }), snapQueue('work.dlq', { arguments: bounded })],
      bindings: [snapBinding('app', 'work', 'k')],
    })
    expect(kindsOf(run(parts('work.dlq')))).toEqual([])
    expect(kindsOf(run(parts('no.such.queue')))).toEqual([['dlx-unroutable', ['work', '']]])
  })

  it('finds a DLQ with a TTL and no DLX, and a quorum work queue dead-lettering at-most-once', () => {
    const d = run(
      {
        exchanges: [snapExchange('app'), snapExchange('dlx', 'fanout')],
        queues: [
          snapQueue('work', { type: 'quorum', consumers: 1, arguments: { 'x-queue-type': 'quorum', 'x-dead-letter-exchange': 'dlx' } }),
          snapQueue('dlq', { arguments: { ...bounded, 'x-message-ttl': 86_400_000 } }),
        ],
        bindings: [snapBinding('app', 'work', 'k'), snapBinding('dlx', 'dlq', '')],
      },
      [{ id: '1', queue: 'dlq' }],
    )
    expect(kindsOf(d)).toEqual([
      ['dlq-ttl-no-dlx', ['dlq']],
      ['quorum-at-most-once', ['work']],
    ])
    expect(d.nodes.find((n) => n.id === 'q:dlq')).toMatchObject({ role: 'dlq', sourceId: '1', severity: 'error' })
  })

  it('finds a consumed queue without a DLX, but not a temporary one', () => {
    const d = run({
      exchanges: [snapExchange('app')],
      queues: [snapQueue('work', { consumers: 2 }), snapQueue('amq.gen-reply', { consumers: 1, exclusive: true, autoDelete: true })],
      bindings: [snapBinding('app', 'work', 'k'), snapBinding('app', 'amq.gen-reply', 'reply')],
    })
    expect(kindsOf(d)).toEqual([['no-dlx', ['work']]])
  })

  it('finds a trap set by a policy matched by apply-to, and counts what it checked', () => {
    const d = run({
      exchanges: [snapExchange('app')],
      queues: [snapQueue('q.quorum', { type: 'quorum', consumers: 1, arguments: { 'x-queue-type': 'quorum' } }), snapQueue('q.classic')],
      bindings: [snapBinding('app', 'q.quorum', 'a'), snapBinding('app', 'q.classic', 'b')],
      policies: [snapPolicy('limit', '^q\\.', { 'delivery-limit': 3 }, 0, 'quorum_queues'), snapPolicy('bounded', '^q\\.classic$', { 'max-length': 5, overflow: 'reject-publish' }, 0, 'classic_queues')],
    })
    expect(kindsOf(d)).toEqual([['quorum-delivery-limit-no-dlx', ['q.quorum']]])
    expect(d.findings[0].evidence).toContainEqual({ label: 'delivery-limit', value: '3 (policy "limit")' })
    expect(d.checks.find((c) => c.kind === 'quorum-delivery-limit-no-dlx')).toEqual({ kind: 'quorum-delivery-limit-no-dlx', checked: 1, raised: 1, description: expect.any(String) })
  })

  it('focuses on the graph around one queue', () => {
    const d = run({
      exchanges: [snapExchange('app'), snapExchange('dlx', 'fanout'), snapExchange('other')],
      queues: [snapQueue('work', { consumers: 1, arguments: { 'x-dead-letter-exchange': 'dlx' } }), snapQueue('dlq', { arguments: bounded }), snapQueue('unrelated', { consumers: 1 })],
      bindings: [snapBinding('app', 'work', 'k'), snapBinding('dlx', 'dlq', ''), snapBinding('other', 'unrelated', 'u')],
    })
    const focused = focusOnQueue(d, 'dlq', 3)
    expect(focused.nodes.map((n) => n.id)).toEqual(['q:dlq', 'q:work', 'x:app', 'x:dlx'])
    expect(focused.edges.map((e) => e.id).sort()).toEqual(['b:x:app>q:work:k', 'b:x:dlx>q:dlq:', 'd:q:work'])
    expect(focused.findings).toEqual([])
    expect(d.findings.map((f) => f.kind)).toEqual(['no-dlx'])
    expect(focusOnQueue(d, 'dlq', 1).nodes.map((n) => n.id)).toEqual(['q:dlq', 'x:dlx'])
  })
})

describe('retry loops: what counts as a way out', () => {
  const loop = (extra: Partial<Parameters<typeof snapshotOf>[0]> = {}) => ({
    exchanges: [snapExchange('jobs'), snapExchange('jobs.retry'), ...(extra.exchanges ?? [])],
    queues: [
      snapQueue('jobs.work', { arguments: { 'x-dead-letter-exchange': 'jobs.retry' }, consumers: 1 }),
      snapQueue('jobs.delay', { arguments: { 'x-dead-letter-exchange': 'jobs', 'x-message-ttl': 5000 } }),
      ...(extra.queues ?? []),
    ],
    bindings: [snapBinding('jobs', 'jobs.work', 'job'), snapBinding('jobs.retry', 'jobs.delay', 'job'), ...(extra.bindings ?? [])],
  })

  it("is found when only another application's parking exchange leads to a DLQ", () => {
    const d = run(loop({ exchanges: [snapExchange('billing.parking', 'fanout')], queues: [snapQueue('billing.dlq', { arguments: bounded })], bindings: [snapBinding('billing.parking', 'billing.dlq', '')] }))
    expect(kindsOf(d).map(([kind]) => kind)).toContain('retry-loop-no-exit')
  })

  it("is not found when the loop's own DLX escalates some key to a DLQ", () => {
    const d = run(loop({ queues: [snapQueue('parked', { arguments: bounded })], bindings: [snapBinding('jobs.retry', 'parked', 'job.exhausted')] }), [{ id: '1', queue: 'parked' }])
    expect(kindsOf(d).map(([kind]) => kind)).not.toContain('retry-loop-no-exit')
  })

  it('is not found when stored letters came out of the loop into a drained DLQ', () => {
    const evidence = { ...emptyEvidence(), deathQueues: [{ queue: 'jobs.work', maxCount: 3, letters: 12, sourceIds: ['1'] }] }
    const d = diagnose({ snapshot: snapshotOf(loop()), evidence, sources: [] })
    expect(kindsOf(d).map(([kind]) => kind)).not.toContain('retry-loop-no-exit')
  })
})
