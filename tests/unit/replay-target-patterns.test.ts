import { describe, expect, it } from 'vitest'
import { exchangePatternMatches } from '@/lib/shared/schemas/replay-targets'
import type { MatchMeter } from '@/lib/shared/topology/topic-match'

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

  it('does bounded work on patterns that would make a backtracking matcher explode', () => {
    // Recursive backtracking takes exponentially many steps here; the iterative match at most |pattern| × |exchange|.
    const hostile = '*a*a*a*a*a*a*a*a*a*a*a*a*b'
    for (const length of [50, 100, 250]) {
      const meter: MatchMeter = { steps: 0 }
      expect(exchangePatternMatches(hostile, 'a'.repeat(length), meter)).toBe(false)
      // Counted for real: every character of the name is looked at.
      expect(meter.steps).toBeGreaterThanOrEqual(length)
      expect(meter.steps).toBeLessThanOrEqual((hostile.length + 1) * (length + 1))
    }
  })
})
