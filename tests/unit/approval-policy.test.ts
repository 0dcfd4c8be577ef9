import { describe, expect, it } from 'vitest'
import { APPROVAL_OFF, approvalReasons } from '@/lib/server/replay/approval-policy'
import { planDrift } from '@/lib/server/engines/replay-executor/start-job'
import type { ReplayPlanDto, ReplayPlanTargetDto } from '@/lib/shared/schemas/replay'

const facts = { replayable: 500, editedMessages: 0, target: { type: 'source' as const }, criticalQueues: [] as string[] }

describe('approvalReasons: the four-eyes policy', () => {
  it('asks nothing while the admin turned nothing on', () => {
    expect(approvalReasons(APPROVAL_OFF, { ...facts, replayable: 10_000_000, editedMessages: 3, target: { type: 'custom', exchange: 'x', routingKey: 'k' }, criticalQueues: ['pay.dlq'] })).toEqual([])
  })

  it('counts a replay above N, not at N', () => {
    const policy = { ...APPROVAL_OFF, aboveMessages: 500 }
    expect(approvalReasons(policy, facts)).toEqual([])
    expect(approvalReasons(policy, { ...facts, replayable: 501 })).toEqual(['it publishes 501 messages, more than 500'])
    expect(approvalReasons({ ...APPROVAL_OFF, aboveMessages: 0 }, { ...facts, replayable: 1 })).toHaveLength(1)
  })

  it('edited messages, a custom target and critical sources each give their reason when turned on', () => {
    const all = { aboveMessages: null, editedMessages: true, customTarget: true, criticalSources: true }
    expect(approvalReasons(all, facts)).toEqual([])
    const reasons = approvalReasons(all, { ...facts, editedMessages: 1, target: { type: 'custom', exchange: 'orders', routingKey: 'retry' }, criticalQueues: ['pay.dlq', 'ledger.dlq'] })
    expect(reasons).toEqual([
      'it sends 1 edited message',
      'its target is custom (exchange "orders", key "retry")',
      'it replays messages of critical sources pay.dlq, ledger.dlq',
    ])
  })

  it('a queue target is not custom', () => {
    expect(approvalReasons({ ...APPROVAL_OFF, customTarget: true }, { ...facts, target: { type: 'queue' } })).toEqual([])
  })
})

const target = (over: Partial<ReplayPlanTargetDto> = {}): ReplayPlanTargetDto => ({
  exchange: 'orders', routingKey: 'created', messages: 10, exists: true, queues: 1, queueNames: ['orders.q'], alternateExchange: null, fansOut: false, ...over,
})
const plan = (targets: ReplayPlanTargetDto[], replayable = 10) => ({ plan: { targets, replayable } as ReplayPlanDto })

describe('planDrift: what sends a started job back for approval', () => {
  it('nothing when the targets are as approved and the messages are there', () => {
    expect(planDrift(plan([target()]), [target()], 10)).toEqual([])
    expect(planDrift(plan([target()]), [target()], 8)).toEqual([])
  })

  it('an exchange that is gone, a fan-out that appeared, a key that reaches other queues', () => {
    expect(planDrift(plan([target()]), [target({ exists: false, queues: 0, queueNames: [] })], 10)[0]).toMatch(/exchange "orders" with key "created" no longer exists/)
    expect(planDrift(plan([target()]), [target({ queues: 2, queueNames: ['orders.q', 'audit.q'], fansOut: true })], 10)[0]).toMatch(/fan-out/)
    expect(planDrift(plan([target()]), [target({ queueNames: ['orders.v2'] })], 10)[0]).toMatch(/now reaches orders.v2 instead of orders.q/)
  })

  it('unknown routing (management API unreachable) is not a change', () => {
    expect(planDrift(plan([target()]), [target({ exists: null, queues: null, queueNames: [] })], 10)).toEqual([])
  })

  it('more than 20 % of the messages gone', () => {
    expect(planDrift(plan([target()], 10), [target()], 7)).toEqual(['3 of the 10 messages were replayed, resolved or taken by another job meanwhile'])
  })
})
