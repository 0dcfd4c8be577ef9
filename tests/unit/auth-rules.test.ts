import { describe, expect, it } from 'vitest'
import { ownerMayHold } from '@/lib/server/auth/api-tokens'
import { addressInRanges, isLoopbackHostname } from '@/lib/server/platform/addresses'
import { bindingsForGroups, parseGroupRoles } from '@/lib/shared/group-roles'
import { hasPermission, permittedPatterns, type Principal } from '@/lib/server/auth/principal'
import { hostAllowed } from '@/lib/server/platform/http/front'
import { escapeForLog } from '@/lib/server/platform/log'
import { sourcePatternMatches } from '@/lib/shared/roles'

const user = (bindings: { role: 'viewer' | 'operator' | 'admin'; sourcePattern: string | null }[], scope: 'metrics' | 'guard' | null = null): Principal => ({
  kind: 'user', via: 'session', userId: '1', email: 'a@b.c', actor: 'a@b.c', bindings, scope, guardQueue: null, sessionId: '1', tokenId: null,
})

describe('source patterns', () => {
  it.each([
    ['billing.*', 'billing.dlq', true],
    ['billing.*', 'billing.orders.dlq', true],
    ['billing.*', 'billingx.dlq', false],
    ['billing.*', 'orders.billing.dlq', false],
    ['*.dlq', 'orders.dlq', true],
    ['*.dlq', 'orders.dlq.x', false],
    ['orders.dlq', 'orders.dlq', true],
    ['orders.dlq', 'orders.dlqx', false],
    ['*', 'anything', true],
    ['a*b*c', 'axxbyyc', true],
    ['a*b*c', 'axxc', false],
    // JetStream sources are named stream/consumer (docs/jetstream.md#sources): a pattern scopes a stream or one consumer.
    ['ORDERS/*', 'ORDERS/billing', true],
    ['ORDERS/*', 'ORDERS/*', true],
    ['ORDERS/*', 'ORDERS_V2/billing', false],
    ['ORDERS/billing', 'ORDERS/shipping', false],
    ['*/billing', 'PAYMENTS/billing', true],
  ] as const)('%s against %s', (pattern, queue, expected) => expect(sourcePatternMatches(pattern, queue)).toBe(expected))
})

describe('roles and permissions', () => {
  it('an operator limited to billing.* replays there only, and is no admin', () => {
    const p = user([{ role: 'operator', sourcePattern: 'billing.*' }])
    expect(hasPermission(p, 'messages:replay')).toBe(true)
    expect(permittedPatterns(p, 'messages:replay')).toEqual(['billing.*'])
    expect(hasPermission(p, 'admin')).toBe(false)
    expect(hasPermission(p, 'audit:read')).toBe(false)
  })
  it('viewer everywhere plus operator on billing: reads everything, raw on billing only', () => {
    const p = user([{ role: 'viewer', sourcePattern: null }, { role: 'operator', sourcePattern: 'billing.*' }])
    expect(permittedPatterns(p, 'messages:read')).toBeNull()
    expect(permittedPatterns(p, 'messages:raw')).toEqual(['billing.*'])
  })
  it('scoped tokens do exactly their one thing', () => {
    expect(hasPermission(user([], 'metrics'), 'metrics')).toBe(true)
    expect(hasPermission(user([], 'metrics'), 'messages:read')).toBe(false)
    expect(hasPermission(user([], 'guard'), 'guard')).toBe(true)
    expect(hasPermission(user([], 'guard'), 'pauses:write')).toBe(false)
    expect(hasPermission({ kind: 'anonymous' }, 'public')).toBe(true)
    expect(hasPermission({ kind: 'anonymous' }, 'messages:read')).toBe(false)
  })
  it('a token may grant no more than its owner holds', () => {
    const owner = [{ role: 'operator' as const, sourcePattern: 'billing.*' }]
    expect(ownerMayHold(owner, { role: 'operator', sourcePattern: 'billing.*', scope: null, guardQueue: null })).toBe(true)
    expect(ownerMayHold(owner, { role: 'viewer', sourcePattern: 'billing.*', scope: null, guardQueue: null })).toBe(true)
    expect(ownerMayHold(owner, { role: 'operator', sourcePattern: null, scope: null, guardQueue: null })).toBe(false)
    expect(ownerMayHold(owner, { role: 'admin', sourcePattern: null, scope: null, guardQueue: null })).toBe(false)
    expect(ownerMayHold(owner, { role: null, sourcePattern: null, scope: 'metrics', guardQueue: null })).toBe(false)
    expect(ownerMayHold(owner, { role: null, sourcePattern: null, scope: 'guard', guardQueue: 'billing.work' })).toBe(true)
    expect(ownerMayHold(owner, { role: null, sourcePattern: null, scope: 'guard', guardQueue: 'orders.work' })).toBe(false)
  })
})

describe('group mapping (LAZARUS_GROUP_ROLES)', () => {
  it('parses roles, patterns and group names holding = and ,', () => {
    expect(parseGroupRoles('sre=operator; billing=operator:billing.*\ncn=admins,ou=groups,dc=x=admin')).toEqual([
      { group: 'sre', role: 'operator', sourcePattern: null },
      { group: 'billing', role: 'operator', sourcePattern: 'billing.*' },
      { group: 'cn=admins,ou=groups,dc=x', role: 'admin', sourcePattern: null },
    ])
    expect(bindingsForGroups(['sre', 'other'], parseGroupRoles('sre=operator;x=admin'))).toEqual([{ role: 'operator', sourcePattern: null }])
  })
  it.each(['sre', 'sre=root', 'sre=admin:billing.*', 'sre=viewer:bad pattern'])('refuses %s', (raw) => expect(() => parseGroupRoles(raw)).toThrow())
})

describe('addresses and hosts', () => {
  it('trusted proxies: IPv4-mapped peers compare as IPv4, CIDR ranges work', () => {
    expect(addressInRanges('::ffff:10.0.0.5', ['10.0.0.0/8'])).toBe(true)
    expect(addressInRanges('10.0.0.5', ['10.0.0.5'])).toBe(true)
    expect(addressInRanges('11.0.0.5', ['10.0.0.0/8'])).toBe(false)
    expect(addressInRanges('::1', ['127.0.0.1'])).toBe(false)
    expect(addressInRanges(null, ['127.0.0.1'])).toBe(false)
  })
  it('loopback names', () => {
    for (const h of ['localhost', '127.0.0.1', '127.9.9.9', '[::1]', 'app.localhost']) expect(isLoopbackHostname(h), h).toBe(true)
    for (const h of ['localhost.attacker.example', '10.0.0.1', 'example.com']) expect(isLoopbackHostname(h), h).toBe(false)
  })
  it('the Host check: the public URL host with its port, or loopback', () => {
    expect(hostAllowed('lazarus.example.com', 'https://lazarus.example.com')).toBe(true)
    expect(hostAllowed('lazarus.example.com:443', 'https://lazarus.example.com')).toBe(false)
    expect(hostAllowed('LAZARUS.example.com', 'https://lazarus.example.com')).toBe(true)
    expect(hostAllowed('127.0.0.1:3000', 'https://lazarus.example.com')).toBe(true)
    expect(hostAllowed('rebind.attacker.example:3000', undefined)).toBe(false)
    expect(hostAllowed(undefined, undefined)).toBe(false)
    expect(hostAllowed('localhost:3000@evil', undefined)).toBe(false)
  })
})

describe('log lines', () => {
  it('escapes control characters, terminal escapes and line separators', () => {
    expect(escapeForLog('orders\n2026-12-01 INFO forged')).toBe('orders\\n2026-12-01 INFO forged')
    expect(escapeForLog('\u001b[31mred\u001b[0m')).toBe('\\x1b[31mred\\x1b[0m')
    expect(escapeForLog('a\u2028b\u009bc\rd\te')).toBe('a\\u2028b\\x9bc\\rd\\te')
    expect(escapeForLog('plain text ü 日本')).toBe('plain text ü 日本')
  })
})
