import { describe, expect, it } from 'vitest'
import { RateMeter, TokenBucket } from '@/lib/server/engines/replay-executor/token-bucket'

/** Simulates a publisher that sleeps exactly as long as the bucket asks. */
function simulate(rate: number, seconds: number): number[] {
  const bucket = new TokenBucket(rate, 0)
  const times: number[] = []
  let now = 0
  while (now < seconds * 1000) {
    const wait = bucket.take(now)
    if (wait === 0) times.push(now)
    else now += Math.max(wait, 1) // timers fire no sooner than 1 ms
  }
  return times
}

describe('token bucket', () => {
  for (const rate of [1, 10, 200, 3_000, 50_000]) {
    it(`holds ${rate}/s within 10% over any second`, () => {
      const times = simulate(rate, 5)
      for (let start = 0; start <= 4_000; start += 250) {
        const n = times.filter((t) => t >= start && t < start + 1_000).length
        expect(n).toBeGreaterThanOrEqual(Math.floor(rate * 0.9))
        expect(n).toBeLessThanOrEqual(Math.ceil(rate * 1.1))
      }
    })
  }

  it('bursts at most about 50 ms worth after an idle period', () => {
    const bucket = new TokenBucket(1_000, 0)
    let burst = 0
    while (bucket.take(10_000) === 0) burst++
    expect(burst).toBe(50)
  })

  it('says how long to wait for the next token', () => {
    const bucket = new TokenBucket(100, 0)
    expect(bucket.take(0)).toBe(0)
    expect(bucket.take(0)).toBeCloseTo(10, 5)
    expect(bucket.take(5)).toBeCloseTo(5, 5)
  })
})

describe('rate meter', () => {
  it('reports publishes per second over its window', () => {
    const meter = new RateMeter(5_000, 0)
    for (let t = 0; t < 10_000; t += 10) meter.add(1, t)
    // The current 100 ms slot has only just begun, so the window holds 4.9 s of publishes.
    expect(meter.perSecond(10_000)).toBeGreaterThanOrEqual(97)
    expect(meter.perSecond(10_000)).toBeLessThanOrEqual(100)
    expect(meter.perSecond(20_000)).toBe(0)
  })
  it('does not divide by the whole window while it is young', () => {
    const meter = new RateMeter(5_000, 0)
    for (let t = 0; t < 1_000; t += 5) meter.add(1, t)
    expect(meter.perSecond(1_000)).toBe(200)
  })
})
