import 'server-only'

/**
 * A token bucket for a job's publish rate. The burst is kept to about 50 ms worth of tokens (at least one), so a
 * rate holds over any window of a second or more, not just on average.
 */
export class TokenBucket {
  private tokens: number
  private last: number
  readonly capacity: number

  constructor(
    readonly rate: number,
    now = performance.now(),
  ) {
    this.capacity = Math.max(1, rate / 20)
    this.tokens = 1
    this.last = now
  }

  /** Takes a token and returns 0, or returns how many milliseconds until one is available. */
  take(now = performance.now()): number {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) * this.rate) / 1000)
    this.last = now
    if (this.tokens >= 1) {
      this.tokens -= 1
      return 0
    }
    return ((1 - this.tokens) * 1000) / this.rate
  }
}

/** Publishes per second over the last `windowMs`, from a ring of per-100 ms counts. */
export class RateMeter {
  private readonly slots: number[]
  private slotAt: number
  private readonly started: number

  constructor(
    private readonly windowMs = 5_000,
    now = performance.now(),
  ) {
    this.slots = new Array(Math.ceil(windowMs / 100)).fill(0)
    this.slotAt = Math.floor(now / 100)
    this.started = now
  }

  private advance(now: number): void {
    const slot = Math.floor(now / 100)
    for (let s = this.slotAt + 1; s <= slot && s - this.slotAt <= this.slots.length; s++) this.slots[s % this.slots.length] = 0
    this.slotAt = Math.max(this.slotAt, slot)
  }

  add(n = 1, now = performance.now()): void {
    this.advance(now)
    this.slots[this.slotAt % this.slots.length] += n
  }

  perSecond(now = performance.now()): number {
    this.advance(now)
    const span = Math.min(this.windowMs, Math.max(100, now - this.started))
    return Math.round((this.slots.reduce((a, b) => a + b, 0) * 1000) / span)
  }
}
