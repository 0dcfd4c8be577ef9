import { describe, expect, it } from 'vitest'
import { exchangeAlternate, matchPolicy, mergedPolicyDefinition, queueEffectiveSettings } from '@/lib/server/topology/effective-settings'
import { snapExchange, snapPolicy, snapQueue, snapshotOf } from '../helpers/topology-snapshot'

const settingsOf = (queue: ReturnType<typeof snapQueue>, parts: Parameters<typeof snapshotOf>[0] = {}) => queueEffectiveSettings({ queue, snapshot: snapshotOf(parts) }).byKey

describe('effective settings', () => {
  it('takes an argument over a policy for a non-numeric key, and shows what it overrode', () => {
    const q = snapQueue('orders', { arguments: { 'x-dead-letter-exchange': 'from-arg' } })
    const dlx = settingsOf(q, { policies: [snapPolicy('p', '^orders$', { 'dead-letter-exchange': 'from-policy' })] }).get('dead-letter-exchange')
    expect(dlx).toEqual({ key: 'dead-letter-exchange', value: 'from-arg', from: 'argument', overridden: [{ value: 'from-policy', from: 'policy', policy: 'p' }] })
  })

  it('lets the lower value win for numeric limits, whoever sets it', () => {
    const q = snapQueue('orders', { arguments: { 'x-max-length': 1000, 'x-message-ttl': 500 } })
    const settings = settingsOf(q, { policies: [snapPolicy('p', 'orders', { 'max-length': 10, 'message-ttl': 60_000 })] })
    expect(settings.get('max-length')).toMatchObject({ value: 10, from: 'policy', policy: 'p', overridden: [{ value: 1000, from: 'argument' }] })
    expect(settings.get('message-ttl')).toMatchObject({ value: 500, from: 'argument', overridden: [{ value: 60_000, from: 'policy' }] })
  })

  it('lets an operator policy beat both for non-numeric keys, and the lowest win for limits', () => {
    const q = snapQueue('orders', { arguments: { 'x-overflow': 'drop-head', 'x-max-length': 50 } })
    const settings = settingsOf(q, {
      policies: [snapPolicy('user', '.*', { overflow: 'reject-publish', 'max-length': 20 })],
      operatorPolicies: [snapPolicy('op', '.*', { overflow: 'reject-publish-dlx', 'max-length': 30 })],
    })
    expect(settings.get('overflow')).toMatchObject({ value: 'reject-publish-dlx', from: 'operator-policy', policy: 'op' })
    expect(settings.get('overflow')?.overridden).toHaveLength(2)
    expect(settings.get('max-length')).toMatchObject({ value: 20, from: 'policy', policy: 'user' })
  })

  it('applies only the highest-priority matching policy', () => {
    const q = snapQueue('orders.work')
    const policies = [snapPolicy('low', '^orders\\.', { 'message-ttl': 1 }, 1), snapPolicy('high', 'work$', { 'dead-letter-exchange': 'dlx' }, 5)]
    const settings = settingsOf(q, { policies })
    expect(settings.get('dead-letter-exchange')).toMatchObject({ value: 'dlx', policy: 'high' })
    expect(settings.has('message-ttl')).toBe(false)
  })

  it('matches apply-to against the object kind and the queue type', () => {
    const policies = [
      snapPolicy('quorum-only', '.*', { 'delivery-limit': 5 }, 9, 'quorum_queues'),
      snapPolicy('exchanges', '.*', { 'alternate-exchange': 'ae' }, 8, 'exchanges'),
      snapPolicy('all', '.*', { 'message-ttl': 7 }, 1, 'all'),
    ]
    const classic = settingsOf(snapQueue('c'), { policies })
    expect(classic.get('message-ttl')).toMatchObject({ value: 7, policy: 'all' })
    expect(classic.has('delivery-limit')).toBe(false)
    expect(settingsOf(snapQueue('q', { type: 'quorum' }), { policies }).get('delivery-limit')).toMatchObject({ value: 5, policy: 'quorum-only' })
    expect(matchPolicy({ policies, name: 'x', target: { kind: 'exchange' } })?.name).toBe('exchanges')
    expect(matchPolicy({ policies: [snapPolicy('s', '.*', {}, 1, 'streams')], name: 'c', target: { kind: 'queue', type: 'classic' } })).toBeNull()
    // PCRE escapes JavaScript's unicode mode would reject still match.
    expect(matchPolicy({ policies: [snapPolicy('dash', '^orders\\-dlq$', {})], name: 'orders-dlq', target: { kind: 'queue', type: 'classic' } })?.name).toBe('dash')
  })

  it('fills the defaults the rules need by broker version', () => {
    const quorum = snapQueue('q', { type: 'quorum' })
    expect(settingsOf(quorum, { brokerVersion: '4.1.0' }).get('delivery-limit')).toEqual({ key: 'delivery-limit', value: 20, from: 'default' })
    expect(settingsOf(quorum, { brokerVersion: '3.13.7' }).has('delivery-limit')).toBe(false)
    expect(settingsOf(quorum).get('dead-letter-strategy')).toMatchObject({ value: 'at-most-once', from: 'default' })
    expect(settingsOf(snapQueue('c')).get('overflow')).toMatchObject({ value: 'drop-head', from: 'default' })
  })

  it('reads an exchange\'s alternate exchange from its argument before a policy', () => {
    const policies = [snapPolicy('ae', '.*', { 'alternate-exchange': 'from-policy' }, 0, 'exchanges')]
    expect(exchangeAlternate({ exchange: snapExchange('x', 'direct', { 'alternate-exchange': 'from-arg' }), policies })).toMatchObject({ value: 'from-arg', from: 'argument' })
    expect(exchangeAlternate({ exchange: snapExchange('y'), policies })).toMatchObject({ value: 'from-policy', from: 'policy', policy: 'ae' })
    expect(exchangeAlternate({ exchange: snapExchange('z'), policies: [] })).toBeNull()
  })

  it('merges an operator policy over the user policy as effective_policy_definition does', () => {
    const policy = snapPolicy('u', '.*', { 'max-length': 10, 'dead-letter-exchange': 'd' })
    const operatorPolicy = snapPolicy('o', '.*', { 'max-length': 5, expires: 100 })
    expect(mergedPolicyDefinition({ policy, operatorPolicy })).toEqual({ 'max-length': 5, 'dead-letter-exchange': 'd', expires: 100 })
  })
})

describe('policy patterns', () => {
  it('run on a linear-time engine: a backtracking pattern set on the broker cannot stall the doctor', () => {
    // On V8's backtracking engine this test would not finish: (a|a)* tries 2^40 ways before failing on the missing b.
    const policies = [snapPolicy('evil', '^(a|a)*b$', { 'max-length': 1 }), snapPolicy('plain', '^a+$', { 'max-length': 5 }, 0)]
    expect(matchPolicy({ policies, name: 'a'.repeat(40), target: { kind: 'queue', type: 'classic' } })?.name).toBe('plain')
  })
})
