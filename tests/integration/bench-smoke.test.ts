import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = path.resolve(import.meta.dirname, '../..')

/**
 * The benchmarks are not timed tests, but they must keep running: bench:export once answered "HTTP 401 Sign in first"
 * for months after sign-in landed, and nobody saw it. Each runs here at a size that only proves it still works end to
 * end; its figures are not looked at.
 */
describe('the benchmarks still run', () => {
  it('bench:export signs in, exports every row redacted through the route, and prints its figures', async () => {
    const { stdout } = await run(process.execPath, ['--conditions=react-server', '--import', 'tsx', 'lib/bench/export.ts'], {
      cwd: ROOT,
      env: { ...process.env, BENCH_ROWS: '2000', LAZARUS_LOG_LEVEL: 'warn' },
      maxBuffer: 16 * 1024 * 1024,
    })
    expect(stdout).toMatch(/^2,000 rows, bodies/m)
    expect(stdout).toMatch(/\(c\) GET \/api\/export\?format=jsonl \(route handler, redacted\): +[\d,]+ rows\/s/)
    expect(stdout).toMatch(/export \/ COPY: \d+%/)
    // One verdict line per target, whatever this busy machine measured.
    expect(stdout).toMatch(/^(PASS|MISS) export rate vs COPY of the same rows \(jsonl, redacted\): [\d.]+ % \(target ≥ 50\.0 %\)$/m)
    expect(stdout).toMatch(/^(PASS|MISS) export process peak RSS: [\d,]+ MB \(target ≤ 200 MB\)$/m)
  })
})
