import { describe, expect, it } from 'vitest'
import { exchangePatternMatches } from '@/lib/shared/schemas/replay-targets'

describe('custom replay target patterns', () => {
  it.each([
    ['orders.*', 'orders.retry', true],
    ['orders.*', 'orders.eu.retry', true],
    ['orders.*', 'orders.', true],
    ['orders.*', 'orders', false],
    ['orders.*', 'xorders.retry', false],
    ['billing.retry', 'billing.retry', true],
    ['billing.retry', 'billing.retry2', false],
    ['billing.retry', 'Billing.retry', false],
    ['*.retry', 'orders.retry', true],
    ['*.retry', 'orders.retry.dlq', false],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'aXcYb', false],
    ['*', 'anything', true],
    ['**', '', true],
  ])('%s vs %s: %s', (pattern, exchange, expected) => {
    expect(exchangePatternMatches(pattern, exchange)).toBe(expected)
  })

  it('stays fast on patterns that would make a backtracking matcher explode', () => {
    const started = Date.now()
    expect(exchangePatternMatches('*a*a*a*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(250))).toBe(false)
    expect(Date.now() - started).toBeLessThan(200)
  })
})
