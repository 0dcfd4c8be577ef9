/**
 * npm run bench:all — every bench once, at sizes that keep the whole run near ten minutes on the project's 2-core
 * machines, then their PASS/MISS lines together (lib/bench/verdict.ts). A benchmark, not a test: a MISS is reported,
 * never a failure; only a bench that crashed makes it exit non-zero. Run it on a machine doing nothing else, after
 * `npm run build` (bench:isolation measures the production build, and fails without it).
 * Options: BENCH_ONLY=<regular expression> (the benches whose name matches, e.g. BENCH_ONLY='drain|replay').
 */
import { spawn } from 'node:child_process'

type Bench = { name: string; env: Record<string, string>; note: string }

const BENCHES: Bench[] = [
  { name: 'drain', env: { BENCH_BROKER: 'rabbitmq', BENCH_MESSAGES: '50000' }, note: '50,000 messages' },
  { name: 'drain', env: { BENCH_BROKER: 'jetstream', BENCH_MESSAGES: '20000' }, note: 'JetStream capture, 20,000 failures' },
  { name: 'replay', env: { BENCH_MESSAGES: '20000', BENCH_ROUNDS: '3' }, note: '3 rounds of 20,000 messages' },
  { name: 'export', env: { BENCH_ROWS: '200000' }, note: '200,000 rows' },
  { name: 'api', env: { BENCH_ROWS: '200000', BENCH_REQUESTS: '100', BENCH_SCENARIO_SECONDS: '15' }, note: '200,000 rows' },
  { name: 'isolation', env: { BENCH_ROWS: '100000', BENCH_SAMPLES: '200' }, note: '100,000 rows' },
  { name: 'topology', env: { BENCH_QUEUES: '1000', BENCH_ROUNDS: '3', BENCH_PAGE: '0' }, note: '1,000 queues, no browser' },
]

function runBench(bench: Bench): Promise<{ code: number | null; verdicts: string[]; seconds: number }> {
  const started = performance.now()
  const child = spawn('npm', ['run', '--silent', `bench:${bench.name}`], { env: { ...process.env, ...bench.env }, stdio: ['ignore', 'pipe', 'inherit'] })
  const verdicts: string[] = []
  let partial = ''
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    const lines = (partial + chunk.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) if (/^(PASS|MISS) /.test(line)) verdicts.push(line)
  })
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, verdicts, seconds: (performance.now() - started) / 1000 })))
}

async function main() {
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null
  const summary: string[] = []
  let crashed = 0
  for (const bench of BENCHES.filter((b) => !only || only.test(b.name))) {
    console.log(`\n=== bench:${bench.name} (${bench.note}) ===`)
    const { code, verdicts, seconds } = await runBench(bench)
    if (code !== 0) crashed++
    summary.push(`bench:${bench.name} (${bench.note}, ${seconds.toFixed(0)} s)${code === 0 ? '' : ` CRASHED (exit ${code})`}`, ...verdicts.map((v) => `  ${v}`))
  }
  console.log(`\n=== summary ===\n${summary.join('\n')}`)
  process.exitCode = crashed > 0 ? 1 : 0
}

void main()
