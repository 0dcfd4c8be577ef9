/**
 * npm run bench:topology — the topology doctor against a broker with BENCH_QUEUES queues (default 2,000; issue 17's
 * goal: a run under 5 s), and the topology page's time to interactive in Chromium.
 *
 * Declares, in a vhost of its own, BENCH_QUEUES / 5 applications with the three-tier builder's topology (a work queue,
 * three delay queues and a DLQ each: 2,000 queues, 1,600 exchanges and 2,800 bindings by default) through one
 * definitions import, and breaks every 20th application's retry exchange (its work queue's DLX then does not exist) so
 * the run has findings to record. Each application's DLQ is a (disabled) Lazarus source. Then measures, ROUNDS times:
 *   (a) the bare pipeline: the management API calls a run makes (overview, queues and exchanges in pages of 500 with
 *       the columns the doctor reads, bindings, policies, operator policies), each answer JSON-parsed and nothing else;
 *   (b) readBrokerSnapshot: the same calls with zod on every answer;
 *   (c) diagnose: the analysis alone, on the snapshot of (b);
 *   (d) runTopologyCheck: a whole run, the evidence query and the transaction that records graph and findings included;
 * and prints each one's median, the whole machine's CPU per queue for (d), and (d) / (a).
 * Then (unless BENCH_PAGE=0) starts Lazarus (npm start's server; `next build` first if there is no build) on a fresh
 * database watching that vhost, signs in in Debian's Chromium (tests/e2e/support/chromium.ts) and times /topology?vhost=… from navigation to
 * the graph drawn and laid out (its `data-layout="done"`), ROUNDS times.
 *
 * Options: BENCH_QUEUES (default 2000, a multiple of 5), BENCH_ROUNDS (default 5), BENCH_PAGE=0 (skip the browser),
 * BENCH_PORT (default 3197), BENCH_KEEP=1 (keep the vhost and database).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chromium } from '@playwright/test'
import { openDb, type Db } from '@/lib/server/platform/db'
import { readBrokerSnapshot, readManagementAnswers } from '@/lib/server/topology/broker-snapshot'
import { diagnose } from '@/lib/server/topology/diagnose'
import { runTopologyCheck } from '@/lib/server/topology/run-topology-check'
import { emptyEvidence } from '@/lib/server/topology/topology-evidence'
import { buildThreeTier } from '@/lib/shared/topology/three-tier'
import type { VhostDefinitions } from '@/lib/shared/topology/definitions'
import { chromiumExecutable } from '@/tests/e2e/support/chromium'
import { fmt, freshDatabase, machineBusySeconds, machineCores, PRODUCTION_NODE_FLAGS, productionEnv, sleep } from './bench-support'

const QUEUES = Number(process.env.BENCH_QUEUES ?? 2000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const PAGE = process.env.BENCH_PAGE !== '0'
const PORT = Number(process.env.BENCH_PORT ?? 3197)
const KEEP = process.env.BENCH_KEEP === '1'
const VHOST = 'lazarus_bench_topology'
const MANAGEMENT = process.env.RABBITMQ_MANAGEMENT_URL ?? 'http://guest:guest@127.0.0.1:15672'
const ADMIN = { email: 'bench-admin@lazarus.test', password: 'bench-admin-password-not-secret' }

const apps = Math.floor(QUEUES / 5)
const ms = (n: number) => `${n.toFixed(0)} ms`
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

function management(method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Response> {
  const base = new URL(MANAGEMENT)
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`
  return fetch(`${base.origin}${path}`, { method, headers: { authorization: auth, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
}

async function must(response: Promise<Response>, what: string): Promise<Response> {
  const r = await response
  if (!r.ok && r.status !== 404) throw new Error(`${what}: HTTP ${r.status} ${await r.text()}`)
  return r
}

/** `apps` three-tier applications in one definitions document; every 20th has its retry exchange left out. */
function benchDefinitions(): VhostDefinitions {
  const all: VhostDefinitions = { queues: [], exchanges: [], bindings: [], policies: [] }
  for (let i = 0; i < apps; i++) {
    const { definitions, names } = buildThreeTier({ name: `app${String(i).padStart(4, '0')}`, routingKeys: [`app${i}.#`], retryDelaysMs: [30_000, 300_000, 3_600_000] })
    const broken = i % 20 === 0
    all.queues.push(...definitions.queues)
    all.exchanges.push(...definitions.exchanges.filter((x) => !(broken && x.name === names.retryExchange)))
    all.bindings.push(...definitions.bindings.filter((b) => !(broken && b.source === names.retryExchange)))
  }
  return all
}

/** (a): the management API calls a run makes, their answers JSON-parsed and nothing else. */
async function barePipeline(): Promise<number> {
  const started = performance.now()
  await readManagementAnswers({ vhost: VHOST, timeoutMs: 30_000 })
  return performance.now() - started
}

function startServer(databaseUrl: string): ChildProcess {
  return spawn(process.execPath, [...PRODUCTION_NODE_FLAGS, '--conditions=react-server', '--import', 'tsx', 'lib/cli/serve.ts'], {
    env: {
      ...productionEnv(),
      DATABASE_URL: databaseUrl,
      PORT: String(PORT),
      HOSTNAME: '127.0.0.1',
      LAZARUS_LOG_LEVEL: 'warn',
      LAZARUS_SOURCES: '',
      LAZARUS_TOPOLOGY_VHOSTS: VHOST,
      LAZARUS_TOPOLOGY_INTERVAL_S: '0',
      LAZARUS_ADMIN_EMAIL: ADMIN.email,
      LAZARUS_ADMIN_PASSWORD: ADMIN.password,
      LAZARUS_MIGRATIONS_DIR: `${process.cwd()}/prisma/migrations`,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
}

async function waitForHealth(): Promise<void> {
  for (let i = 0; i < 240; i++) {
    const ok = await fetch(`http://127.0.0.1:${PORT}/api/health`).then((r) => r.ok, () => false)
    if (ok) return
    await sleep(500)
  }
  throw new Error('Lazarus did not start within two minutes')
}

/** Sign in, run the doctor once through the API the page uses, then time the page ROUNDS times. */
async function pageTimes(): Promise<{ times: number[]; nodes: number; total: number }> {
  const browser = await chromium.launch({ executablePath: chromiumExecutable(), args: ['--disable-gpu', '--disable-quic'] })
  try {
    const context = await browser.newContext({ baseURL: `http://127.0.0.1:${PORT}`, viewport: { width: 1440, height: 900 } })
    const page = await context.newPage()
    await page.goto('/sign-in')
    await page.getByLabel('E-mail address').fill(ADMIN.email)
    await page.getByLabel('Password').fill(ADMIN.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL((url) => !url.pathname.startsWith('/sign-in'))
    const run = await page.request.post('/api/topology/runs', { data: { vhost: VHOST }, headers: { origin: `http://127.0.0.1:${PORT}` } })
    if (!run.ok()) throw new Error(`Run now: HTTP ${run.status()} ${await run.text()}`)
    const times: number[] = []
    let nodes = 0
    for (let round = 0; round < ROUNDS; round++) {
      const started = Date.now()
      await page.goto(`/topology?vhost=${encodeURIComponent(VHOST)}`)
      await page.locator('[data-layout="done"]').waitFor({ timeout: 120_000 })
      times.push(Date.now() - started)
      nodes = await page.locator('.react-flow__node').count()
    }
    return { times, nodes, total: ((await run.json()) as { nodes: unknown[] }).nodes.length }
  } finally {
    await browser.close()
  }
}

async function main() {
  console.log(`bench:topology — ${fmt(QUEUES)} queues in ${fmt(apps)} three-tier applications, vhost ${VHOST}, ${ROUNDS} rounds, ${machineCores} cores`)
  await must(management('DELETE', `/api/vhosts/${VHOST}`), 'delete the vhost')
  await must(management('PUT', `/api/vhosts/${VHOST}`, {}), 'create the vhost')
  await must(management('PUT', `/api/permissions/${VHOST}/guest`, { configure: '.*', write: '.*', read: '.*' }), 'permissions')
  const definitions = benchDefinitions()
  let started = performance.now()
  await must(management('POST', `/api/definitions/${VHOST}`, definitions), 'import the definitions')
  console.log(`declared ${fmt(definitions.queues.length)} queues, ${fmt(definitions.exchanges.length)} exchanges, ${fmt(definitions.bindings.length)} bindings in ${ms(performance.now() - started)}`)

  const database = await freshDatabase('lazarus_bench_topology')
  let db: Db | undefined
  try {
    db = await openDb({ databaseUrl: database.url, migrate: true })
    await db.sql.query(`INSERT INTO sources (vhost, queue, enabled) SELECT $1, q, false FROM unnest($2::text[]) AS q`, [VHOST, definitions.queues.filter((q) => q.name.endsWith('.dlq')).map((q) => q.name)])
    const sources = (await db.sql.query<{ id: string; queue: string }>('SELECT id::text, queue FROM sources')).rows

    const bare: number[] = []
    const snapshotTimes: number[] = []
    const diagnoseTimes: number[] = []
    const runTimes: number[] = []
    let findings = 0
    let cpu = 0
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await barePipeline())
      started = performance.now()
      const snapshot = await readBrokerSnapshot({ vhost: VHOST, timeoutMs: 30_000 })
      snapshotTimes.push(performance.now() - started)
      started = performance.now()
      findings = diagnose({ snapshot, evidence: emptyEvidence(), sources }).findings.length
      diagnoseTimes.push(performance.now() - started)
      const busy = machineBusySeconds()
      started = performance.now()
      const outcome = await runTopologyCheck({ sql: db.background, vhost: VHOST, timeoutMs: 30_000 })
      runTimes.push(performance.now() - started)
      cpu += machineBusySeconds() - busy
      if (!outcome.ok) throw new Error(outcome.error)
    }
    const run = median(runTimes)
    console.log(`\n(a) bare pipeline (the run's management API calls):    median ${ms(median(bare))}   [${bare.map(ms).join(', ')}]`)
    console.log(`(b) readBrokerSnapshot (zod):                         median ${ms(median(snapshotTimes))}   [${snapshotTimes.map(ms).join(', ')}]`)
    console.log(`(c) diagnose (analysis alone):                        median ${ms(median(diagnoseTimes))}   [${diagnoseTimes.map(ms).join(', ')}]`)
    console.log(`(d) runTopologyCheck (whole run, recorded):           median ${ms(run)}   [${runTimes.map(ms).join(', ')}]  goal < 5,000 ms`)
    console.log(`    findings per run: ${findings}; whole machine CPU per queue for (d): ${((cpu / ROUNDS / QUEUES) * 1e6).toFixed(0)} µs (${(cpu / ROUNDS).toFixed(2)} s per run)`)
    console.log(`    ratio (d) / (a): ${(run / median(bare)).toFixed(2)}`)

    if (PAGE) {
      if (!existsSync('.next/BUILD_ID')) {
        console.log('\nno build: running next build first')
        const built = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' })
        if (built.status !== 0) throw new Error('next build failed')
      }
      const pageDb = await freshDatabase('lazarus_bench_topology_page')
      const server = startServer(pageDb.url)
      try {
        await waitForHealth()
        const { times, nodes, total } = await pageTimes()
        console.log(`\n(e) /topology in Chromium, navigation → graph laid out: median ${ms(median(times))}   [${times.map(ms).join(', ')}]`)
        console.log(`    nodes drawn ${fmt(nodes)} of ${fmt(total)} in the graph (the page draws at most about 300 at once)`)
      } finally {
        server.kill('SIGTERM')
        await new Promise((resolve) => server.once('exit', resolve))
        if (!KEEP) await pageDb.drop()
      }
    }
  } finally {
    await db?.close()
    if (!KEEP) {
      await database.drop()
      await must(management('DELETE', `/api/vhosts/${VHOST}`), 'delete the vhost')
    }
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
