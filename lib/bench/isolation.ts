/**
 * npm run bench:isolation — does one user's heavy work slow everyone else down? (docs/security.md, "Limits")
 *
 * Loads BENCH_ROWS (default 100,000) dead letters (lib/bench/api-load.ts), starts Lazarus as `npm start` runs it (the
 * production build behind the HTTP front, over real HTTP), and measures another user's message-list latency (p50,
 * p95, p99 of GET /api/messages?limit=50) three ways: alone; while one user downloads a JSON Lines export of every
 * message; while one user fires 12 text-search counts at once (the probe that filled the pool before). The export
 * and search user's requests beyond their limits are answered 429 and counted. Needs `npm run build` first.
 * Options: BENCH_ROWS, BENCH_SAMPLES (list requests per phase, default 300).
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { API_TOKEN_PREFIX } from '@/lib/server/auth/api-tokens'
import { newSecret, secretHash } from '@/lib/server/auth/secret-token'
import { openDb } from '@/lib/server/platform/db'
import { loadDataset } from './api-load'
import { fmt, freshDatabase, PRODUCTION_NODE_FLAGS, productionEnv, sleep } from './bench-support'

const rows = Number(process.env.BENCH_ROWS ?? 100_000)
const samples = Number(process.env.BENCH_SAMPLES ?? 300)
const port = 3470

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}

async function listLatencies(base: string, token: string, count: number, until?: () => boolean): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < count || (until && !until()); i++) {
    const started = performance.now()
    const response = await fetch(`${base}/api/messages?limit=50`, { headers: { authorization: `Bearer ${token}` } })
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`list answered ${response.status}`)
    out.push(performance.now() - started)
    if (until && until() && i >= count) break
  }
  return out
}

const summary = (name: string, ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b)
  return `${name.padEnd(44)} n=${String(sorted.length).padStart(4)}  p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms  p95 ${percentile(sorted, 95).toFixed(1).padStart(7)} ms  p99 ${percentile(sorted, 99).toFixed(1).padStart(7)} ms`
}

/** What `npm start` serves: the bench measures the production build, and says so before loading anything. */
const BUILD = '.next/standalone/.next/required-server-files.json'

async function main() {
  if (!existsSync(BUILD)) throw new Error(`bench:isolation measures the production build, and there is none (${BUILD}): run npm run build first`)
  const database = await freshDatabase('lazarus_bench_iso')
  const server = { stop: async () => {} }
  try {
    console.log(`bench:isolation — ${fmt(rows)} dead letters`)
    const db = await openDb({ databaseUrl: database.url })
    const loaded = await loadDataset(database.url, rows)
    console.log(`loaded in ${(loaded.phases.reduce((s, [, ms]) => s + ms, 0) / 1000).toFixed(1)} s`)
    const tokens: Record<string, string> = {}
    for (const name of ['bystander', 'exporter']) {
      const { rows: u } = await db.sql.query<{ id: string }>(`INSERT INTO users (email, auth_source) VALUES ($1, 'local') RETURNING id::text`, [`${name}@lazarus.bench`])
      await db.sql.query(`INSERT INTO role_bindings (user_id, role, origin) VALUES ($1::bigint, 'operator', 'manual')`, [u[0].id])
      tokens[name] = newSecret(API_TOKEN_PREFIX)
      await db.sql.query(`INSERT INTO api_tokens (name, token_hash, user_id, role) VALUES ('bench', $1, $2::bigint, 'operator')`, [secretHash(tokens[name]), u[0].id])
    }
    await db.close()

    const child = spawn(process.execPath, [...PRODUCTION_NODE_FLAGS, '--conditions=react-server', '--import', 'tsx', 'lib/cli/serve.ts'], {
      env: { ...productionEnv(), DATABASE_URL: database.url, PORT: String(port), HOSTNAME: '127.0.0.1', LAZARUS_RUN_WORKERS: '0', LAZARUS_SOURCES: '', LAZARUS_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    server.stop = async () => {
      child.kill('SIGTERM')
      await exited
    }
    const base = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/api/health`)).ok) break
      } catch {
        // starting
      }
      // A server that exited will not answer: say so now (waiting on it left nothing to keep the bench running, and it
      // ended with code 0 having measured nothing).
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before it answered /api/health`)
      if (i > 240) throw new Error('server did not start')
      await sleep(250)
    }

    await listLatencies(base, tokens.bystander, 30) // warm-up
    const alone = await listLatencies(base, tokens.bystander, samples)

    let exportDone = false
    let exportedBytes = 0
    const exportStarted = performance.now()
    const exporting = (async () => {
      const response = await fetch(`${base}/api/export?format=jsonl`, { headers: { authorization: `Bearer ${tokens.exporter}` } })
      const reader = response.body!.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        exportedBytes += value.byteLength
      }
      exportDone = true
    })()
    const duringExport = await listLatencies(base, tokens.bystander, samples, () => exportDone)
    await exporting
    const exportSeconds = (performance.now() - exportStarted) / 1000

    let searchesDone = false
    const statuses: Record<number, number> = {}
    const searching = (async () => {
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) => fetch(`${base}/api/messages/count?q=${['order', 'stock', 'timeout', 'sku'][i % 4]}${round}${i}`, { headers: { authorization: `Bearer ${tokens.exporter}` } })),
        )
        for (const a of answers) {
          statuses[a.status] = (statuses[a.status] ?? 0) + 1
          await a.arrayBuffer()
        }
      }
      searchesDone = true
    })()
    const duringSearch = await listLatencies(base, tokens.bystander, samples, () => searchesDone)
    await searching

    console.log(`\nAnother user's GET /api/messages?limit=50 (${fmt(rows)} rows, over HTTP through the front):`)
    console.log(summary('alone', alone))
    console.log(summary(`during a JSON Lines export of every message`, duringExport))
    console.log(`  (export: ${(exportedBytes / 1024 / 1024).toFixed(0)} MiB in ${exportSeconds.toFixed(1)} s)`)
    console.log(summary('during 3 × 12 parallel search counts', duringSearch))
    console.log(`  (search counts answered: ${Object.entries(statuses).map(([s, n]) => `${n} × ${s}`).join(', ')})`)
  } finally {
    await server.stop()
    await database.drop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
