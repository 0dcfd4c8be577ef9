import { describe, expect, it } from 'vitest'
import { Backoff, backoffDelay, RECONNECT_BACKOFF, type BackoffPolicy } from '@/lib/server/platform/broker/backoff'

const policy: BackoffPolicy = { initialMs: 100, maxMs: 2_000, factor: 2, jitter: 0.2 }
const middle = () => 0.5
const lowest = () => 0
const highest = () => 0.999_999

describe('backoff', () => {
  it('grows by the factor from the initial delay, the middle draw landing on the base', () => {
    expect([1, 2, 3, 4].map((attempt) => backoffDelay(policy, attempt, middle))).toEqual([100, 200, 400, 800])
  })

  it('spreads each delay over base × (1 ± jitter)', () => {
    expect(backoffDelay(policy, 3, lowest)).toBe(320)
    expect(backoffDelay(policy, 3, highest)).toBe(480)
  })

  it('never exceeds the maximum, and keeps spreading once the base saturates', () => {
    const saturated = Array.from({ length: 1_000 }, (_, i) => backoffDelay(policy, 30, () => i / 1_000))
    expect(Math.max(...saturated)).toBeLessThanOrEqual(2_000)
    expect(Math.min(...saturated)).toBeGreaterThanOrEqual(Math.floor((2_000 / 1.2) * 0.8))
    // Not a point mass on the cap: the draws stay spread (capping after the jitter would pile half of them on 2000).
    expect(saturated.filter((d) => d === 2_000).length).toBeLessThan(10)
    expect(new Set(saturated).size).toBeGreaterThan(500)
  })

  it('without jitter, is exactly initial × factor^(attempt − 1), capped', () => {
    const exact = { initialMs: 1_000, maxMs: 30_000, jitter: 0 }
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((attempt) => backoffDelay(exact, attempt))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
  })

  it('survives huge attempt numbers (a broker down for days)', () => {
    expect(backoffDelay(RECONNECT_BACKOFF, 1e6, middle)).toBeLessThanOrEqual(RECONNECT_BACKOFF.maxMs)
    expect(backoffDelay(RECONNECT_BACKOFF, Number.MAX_SAFE_INTEGER, highest)).toBeLessThanOrEqual(RECONNECT_BACKOFF.maxMs)
  })

  it('gives reconnections half a second first and at most ten seconds later, jittered', () => {
    const first = Array.from({ length: 200 }, () => backoffDelay(RECONNECT_BACKOFF, 1))
    expect(Math.min(...first)).toBeGreaterThanOrEqual(400)
    expect(Math.max(...first)).toBeLessThanOrEqual(600)
    expect(new Set(first).size).toBeGreaterThan(20)
    const late = Array.from({ length: 200 }, () => backoffDelay(RECONNECT_BACKOFF, 50))
    expect(Math.max(...late)).toBeLessThanOrEqual(10_000)
    expect(Math.min(...late)).toBeGreaterThanOrEqual(6_600)
  })

  it('Backoff walks the policy and starts over after reset()', () => {
    const backoff = new Backoff(policy, middle)
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400])
    expect(backoff.attempt).toBe(3)
    backoff.reset()
    expect(backoff.attempt).toBe(0)
    expect(backoff.next()).toBe(100)
  })
})
