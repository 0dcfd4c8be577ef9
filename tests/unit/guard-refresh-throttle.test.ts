import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { pauseView, type PauseView } from '@/packages/guard/src/pause-view'
import { PauseRegistry } from '@/packages/guard/src/registry'

/**
 * How often control events make a guard read the pause list, on a fake clock: the rate is the property, so it is
 * measured in the clock's own time rather than against the machine's (the real broker's flood of forged events is in
 * tests/integration/pause-guard-security.test.ts).
 */
describe('guard: events ask for a re-read, at most one per minRefreshIntervalMs', () => {
  let view: PauseView
  /** Fake-clock instants of every read of the list. */
  let reads: number[]
  /** The registry version Lazarus answers. */
  let version: number

  /** A pause view reading from a Lazarus that answers `version` and no pauses, started. */
  function startView(): PauseView {
    const started = pauseView({
      registry: new PauseRegistry('/', 'orders.work'),
      queue: 'orders.work',
      baseUrl: 'http://lazarus.test',
      request: { url: 'http://lazarus.test/api/pauses?queue=orders.work', headers: {} },
      tokenSent: false,
      fetch: async () => {
        reads.push(Date.now())
        return Response.json({ version, pauses: [] })
      },
      pollIntervalMs: 60_000,
      minRefreshIntervalMs: 1_000,
      startTimeoutMs: 10_000,
      retryDelayMs: 100,
      report: (error) => {
        throw error
      },
      onChange: () => {},
      isClosed: () => false,
    })
    started.start()
    return started
  }

  beforeEach(async () => {
    vi.useFakeTimers({ now: 0 })
    reads = []
    version = 7
    view = startView()
    await vi.advanceTimersByTimeAsync(0)
    // The start: the first list, then the confirming read its new version asks for, one interval later.
    await vi.advanceTimersByTimeAsync(1_000)
    expect(reads).toEqual([0, 1_000])
    reads = []
  })

  afterEach(() => {
    view.stop()
    vi.useRealTimers()
  })

  it('a flood of events over 3.5 s becomes one read a second and one after the last event', async () => {
    await vi.advanceTimersByTimeAsync(2_000)
    const floodStart = Date.now()
    for (let i = 0; i < 350; i++) {
      view.refreshSoon()
      await vi.advanceTimersByTimeAsync(10)
    }
    await vi.advanceTimersByTimeAsync(5_000)
    // 350 events: reads 20 ms after the first (events published together are read once), then one per interval while
    // events keep coming, the last one picking up the events that arrived after the read before it.
    expect(reads.map((at) => at - floodStart)).toEqual([20, 1_020, 2_020, 3_020, 4_020])
  })

  it('after a quiet interval, an event is read at once (within the 20 ms that groups a burst)', async () => {
    await vi.advanceTimersByTimeAsync(1_500)
    const eventAt = Date.now()
    view.refreshSoon()
    await vi.advanceTimersByTimeAsync(1_000)
    expect(reads.map((at) => at - eventAt)).toEqual([20])
  })

  it('settled() waits for the read an event asked for, however far the interval puts it, and no longer', async () => {
    // An event 100 ms after the last read: its read is due 900 ms later.
    await vi.advanceTimersByTimeAsync(100)
    view.refreshSoon()
    let settledAt: number | null = null
    void view.settled().then(() => (settledAt = Date.now()))
    await vi.advanceTimersByTimeAsync(899)
    expect(settledAt).toBeNull()
    expect(reads).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(reads).toHaveLength(1)
    expect(settledAt).toBe(reads[0])
    // Nothing due: at once.
    const before = Date.now()
    await view.settled()
    expect(Date.now()).toBe(before)
  })

  it('settled() also waits for the confirming read that a new version asks for', async () => {
    await vi.advanceTimersByTimeAsync(2_000)
    version = 8
    const eventAt = Date.now()
    view.refreshSoon()
    let settledAt: number | null = null
    void view.settled().then(() => (settledAt = Date.now()))
    await vi.advanceTimersByTimeAsync(5_000)
    // The event's read finds version 8, and the read confirming it follows one interval later.
    expect(reads.map((at) => at - eventAt)).toEqual([20, 1_020])
    expect(settledAt! - eventAt).toBe(1_020)
  })
})
