import { describe, expect, it } from 'vitest'
import { InFlightWindow } from '@/lib/server/engines/replay-executor/in-flight-window'

describe('in-flight window', () => {
  it('opens up to its size, then stays closed until half of it is confirmed', () => {
    const window = new InFlightWindow(10)
    expect([0, 5, 9].map((n) => window.closed(n))).toEqual([false, false, false])
    expect(window.closed(10)).toBe(true)
    // Confirms trickle in: still closed above half the window, so publishes go out in bursts.
    expect([9, 8, 6].map((n) => window.closed(n))).toEqual([true, true, true])
    expect(window.closed(5)).toBe(false)
    expect([6, 9].map((n) => window.closed(n))).toEqual([false, false])
    expect(window.closed(10)).toBe(true)
  })

  it('never lets more than its size be unconfirmed', () => {
    const window = new InFlightWindow(3)
    let unconfirmed = 0
    let peak = 0
    for (let step = 0; step < 100; step++) {
      if (!window.closed(unconfirmed)) unconfirmed++
      else if (step % 3 === 0) unconfirmed--
      peak = Math.max(peak, unconfirmed)
    }
    expect(peak).toBe(3)
  })

  it('works with a window of one', () => {
    const window = new InFlightWindow(1)
    expect(window.closed(0)).toBe(false)
    expect(window.closed(1)).toBe(true)
    expect(window.closed(0)).toBe(false)
  })
})
