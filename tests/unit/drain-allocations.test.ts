import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '../..')

/**
 * What the drainer allocates per delivery, held by the build (docs/performance.md#held-by-the-build): a feature that
 * doubles the per-message work of header decoding, normalising or building the row fails here, long before a bench
 * would show it. A count of bytes, not a time: the same code allocates the same bytes on any machine, however busy.
 * When a change needs more, raise the ceiling in the same commit and say why in CHANGELOG.md.
 */
// Measured 41,300 bytes on 2026-12-05 (Node 20; 59,240 before the stack-trace cache keys, the frame and type-name
// scans and the exception rules stopped allocating per message): a quarter above it. Most of what is left is the typed
// header JSON and the header decode (docs/performance.md#drainer).
const CEILING_BYTES_PER_DELIVERY = 52_000

type Measured = { count: number; rounds: { bytes: number; collections: number }[]; row: { errorType: string; failureKind: string; originQueue: string; attempts: number; bodyEncoding: string } }

describe('the drainer’s allocations per delivery', () => {
  it('stay under their ceiling, measured the same in every round', async () => {
    const { stdout } = await run(
      process.execPath,
      // No optimising compiler (its escape analysis removes allocations when it gets round to it), and a young
      // generation no measured round fills, so nothing is collected while counting.
      ['--no-opt', '--no-maglev', '--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', '--conditions=react-server', '--import', 'tsx', 'tests/unit/drain-allocations-child.ts'],
      { cwd: ROOT, env: { ...process.env, LAZARUS_LOG_LEVEL: 'warn' } },
    )
    const measured = JSON.parse(stdout) as Measured
    // The work ran as the drainer runs it: the failure was read from the typed headers.
    expect(measured.row).toEqual({ errorType: 'org.springframework.amqp.rabbit.support.ListenerExecutionFailedException', failureKind: 'exhausted', originQueue: 'orders.work', attempts: 3, bodyEncoding: 'json' })
    expect(measured.rounds).toHaveLength(3)
    for (const round of measured.rounds) expect(round.collections, 'a collection ran while counting: the count is not the allocation').toBe(0)
    const perDelivery = measured.rounds.map((r) => r.bytes / measured.count)
    console.log(`drainer allocations: ${perDelivery.map((b) => Math.round(b)).join(', ')} bytes per delivery (ceiling ${CEILING_BYTES_PER_DELIVERY})`)
    expect(Math.max(...perDelivery) - Math.min(...perDelivery)).toBeLessThan(Math.min(...perDelivery) * 0.02)
    expect(Math.max(...perDelivery)).toBeLessThanOrEqual(CEILING_BYTES_PER_DELIVERY)
  })
})
