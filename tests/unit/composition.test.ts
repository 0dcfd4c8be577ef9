import { afterEach, describe, expect, it, vi } from 'vitest'

/**
 * The composition root (lib/server/platform/process/composition.ts) and the process-wide values beside it
 * (lib/server/platform/per-process.ts). Next.js loads server modules more than once in one process (instrumentation,
 * routes and pages are separate bundles; the front runs unbundled), so each test here loads the modules twice, as two
 * bundles would, and checks that both copies share one value. The built server is checked the same way in
 * tests/e2e/process-root.spec.ts.
 */

const COMPOSITION = '@/lib/server/platform/process/composition'

/** A fresh copy of `specifier` and everything it imports, as another bundle of the same process would load it. */
async function anotherCopy<T>(specifier: string): Promise<T> {
  vi.resetModules()
  return (await import(/* @vite-ignore */ specifier)) as T
}

type CompositionModule = typeof import('@/lib/server/platform/process/composition')

describe('the composition root', () => {
  afterEach(async () => {
    await (await import(COMPOSITION)).closeComposition()
  })

  it('is one object per process, whichever copy of the module asks', async () => {
    const first = await anotherCopy<CompositionModule>(COMPOSITION)
    const second = await anotherCopy<CompositionModule>(COMPOSITION)
    expect(second.composition).not.toBe(first.composition)
    const root = first.composition()
    expect(second.composition()).toBe(root)
    // What the engines and the routes are handed: the same connections, publisher, signal and registry.
    expect(second.composition().brokers.control).toBe(root.brokers.control)
    expect(second.composition().control).toBe(root.control)
    expect(second.composition().processMetrics()).toBe(root.processMetrics())
  })

  it('lets a route see the engines another copy started, and a nudge from one copy wake a listener of the other', async () => {
    const engineSide = await anotherCopy<CompositionModule>(COMPOSITION)
    const routeSide = await anotherCopy<CompositionModule>(COMPOSITION)
    let woken = 0
    engineSide.composition().replayWork.listen(() => {
      woken++
    })
    const engines = { drainer: { status: () => ({ state: 'running', brokerError: null }) }, stop: async () => {} }
    engineSide.composition().engines = Promise.resolve(engines)
    expect(await routeSide.runningEngines(routeSide.composition())).toBe(engines)
    routeSide.composition().replayWork.notify()
    expect(woken).toBe(1)
  })

  it('names its broker connections for the management UI and opens none until used', () => {
    return anotherCopy<CompositionModule>(COMPOSITION).then(({ composition }) => {
      const { control, health } = composition().brokers
      expect([control.name, health.name]).toEqual(['lazarus-control', 'lazarus-health'])
      expect([control.status().state, health.status().state]).toEqual(['idle', 'idle'])
    })
  })

  it('is made anew after closeComposition, which closed the old one\'s connections', async () => {
    const { closeComposition, composition } = await anotherCopy<CompositionModule>(COMPOSITION)
    const old = composition()
    await closeComposition()
    expect(old.brokers.control.status().state).toBe('closed')
    expect(old.brokers.health.status().state).toBe('closed')
    expect(composition()).not.toBe(old)
    expect(composition().brokers.control.status().state).toBe('idle')
  })

  it('reports no engines when none were started, or when their start failed', async () => {
    const { composition, runningEngines } = await anotherCopy<CompositionModule>(COMPOSITION)
    expect(await runningEngines(composition())).toBeNull()
    const failed = Promise.reject(new Error('broker down'))
    composition().engines = failed
    expect(await runningEngines(composition())).toBeNull()
  })
})

describe('what stays process-wide below the root', () => {
  it('the request being served: entered in one copy, read by another copy (its logger, the audit log)', async () => {
    const entering = await anotherCopy<typeof import('@/lib/server/platform/request-context')>('@/lib/server/platform/request-context')
    const reading = await anotherCopy<typeof import('@/lib/server/platform/request-context')>('@/lib/server/platform/request-context')
    expect(reading).not.toBe(entering)
    expect(entering.runInRequest({ requestId: 'req-7' }, () => reading.currentRequestId())).toBe('req-7')
    expect(reading.currentRequestId()).toBeNull()
  })

  it("the front's mark: set by the unbundled front, seen by the routes' copy", async () => {
    const front = await anotherCopy<typeof import('@/lib/server/platform/request-facts')>('@/lib/server/platform/request-facts')
    const routes = await anotherCopy<typeof import('@/lib/server/platform/request-facts')>('@/lib/server/platform/request-facts')
    const wasActive = routes.frontActive()
    front.markFrontActive()
    expect(wasActive).toBe(false)
    expect(routes.frontActive()).toBe(true)
  })

  it('the log output: installed through one copy, written to by every copy', async () => {
    const installing = await anotherCopy<typeof import('@/lib/server/platform/log')>('@/lib/server/platform/log')
    const logging = await anotherCopy<typeof import('@/lib/server/platform/log')>('@/lib/server/platform/log')
    const lines: string[] = []
    const restore = installing.setLogOutput({ format: 'json', write: (line) => void lines.push(line) })
    try {
      logging.logger('test').warn('from the other copy')
    } finally {
      restore()
    }
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['from the other copy'])
  })
})
