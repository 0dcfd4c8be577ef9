/**
 * Timing for `npm run bench:api`: route handlers called in-process (server time, no network), the SQL each
 * request sent captured on the way, then the same SQL replayed bare through pg and through EXPLAIN ANALYZE.
 */
import pg from 'pg'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'

export type Captured = { text: string; params: unknown[] }

/** Timed requests per scenario even past the time budget, so a slow query still gets a p50. */
const MIN_TIMED = 3

/** Where the capturing Sql writes the queries of the request being timed (null: not capturing). */
export type CaptureSink = { current: Captured[] | null }

/** The app's Sql with every query also written to `sink`, so the bench replays exactly what a route sent. */
export function capturingSql(inner: Sql, sink: CaptureSink): Sql {
  return {
    kind: inner.kind,
    query(text, params = [], options) {
      sink.current?.push({ text, params: [...params] })
      return inner.query(text, params, options)
    },
    execute(text, params = [], options) {
      sink.current?.push({ text, params: [...params] })
      return inner.execute(text, params, options)
    },
    transaction: (fn) => inner.transaction((tx) => fn(capturingSql(tx, sink))),
    exec: (script) => inner.exec(script),
    close: () => inner.close(),
  }
}

export const capturingDb = (db: Db, sink: CaptureSink): Db => ({ ...db, sql: capturingSql(db.sql, sink) })

export type Call = (i: number) => Promise<Response>

export type Scenario = {
  name: string
  /** p95 target in milliseconds. */
  target: number
  call: Call
}

export type Budget = { requests: number; warmup: number; seconds: number }

export type ScenarioResult = {
  name: string
  target: number
  api: number[]
  sql: number[]
  explain: { execution: number; planning: number; plan: string } | null
  bytes: number
  /** Items in the last response: messages or groups of a list, 1 for a detail. */
  items: number
  queriesPerRequest: number
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]
}

async function ok(response: Response, name: string): Promise<ArrayBuffer> {
  const body = await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status}: ${Buffer.from(body).toString('utf8').slice(0, 300)}`)
  return body
}

function itemsOf(body: ArrayBuffer): number {
  const json = JSON.parse(Buffer.from(body).toString('utf8')) as { messages?: unknown[]; groups?: unknown[] }
  return json.messages?.length ?? json.groups?.length ?? 1
}

/** Warm-up, then up to `budget.requests` timed calls (fewer if the time budget runs out), each capturing its SQL. */
export async function timeScenario(scenario: Scenario, sink: CaptureSink, budget: Budget): Promise<{ api: number[]; captured: Captured[][]; bytes: number; items: number }> {
  const warmupDeadline = performance.now() + budget.seconds * 250
  for (let i = 0; i < budget.warmup && performance.now() < warmupDeadline; i++) await ok(await scenario.call(i), scenario.name)
  const api: number[] = []
  const captured: Captured[][] = []
  let last = new ArrayBuffer(0)
  const deadline = performance.now() + budget.seconds * 1000
  for (let i = 0; i < budget.requests && (i < MIN_TIMED || performance.now() < deadline); i++) {
    sink.current = []
    const start = performance.now()
    // The response body is read inside the timing: serialising the JSON is part of the server's work.
    last = await ok(await scenario.call(budget.warmup + i), scenario.name)
    api.push(performance.now() - start)
    captured.push(sink.current)
    sink.current = null
  }
  return { api, captured, bytes: last.byteLength, items: itemsOf(last) }
}

/** The captured SQL of each timed request, replayed bare over one pg connection (psql-equivalent). */
export async function replaySql(url: string, captured: Captured[][], seconds: number): Promise<number[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    // Warm the connection and the caches as the app's pool was.
    for (const queries of captured.slice(0, 2)) for (const q of queries) await client.query(q.text, q.params)
    const times: number[] = []
    const deadline = performance.now() + seconds * 1000
    for (let i = 0; i < captured.length && (i < MIN_TIMED || performance.now() < deadline); i++) {
      const start = performance.now()
      for (const q of captured[i]) await client.query(q.text, q.params)
      times.push(performance.now() - start)
    }
    return times
  } finally {
    await client.end()
  }
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the SQL of up to five requests spread over the run (fewer past the time budget): the median execution
 * time, and the plan of the slowest one (the one worth reading when a target fails).
 */
export async function explainSql(url: string, captured: Captured[][], seconds: number): Promise<ScenarioResult['explain']> {
  if (captured.length === 0 || captured[0].length === 0) return null
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const picks = [...new Set([0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(f * (captured.length - 1))))]
    const runs: { execution: number; planning: number; plan: string }[] = []
    const deadline = performance.now() + seconds * 1000
    for (const i of picks) {
      if (runs.length > 0 && performance.now() > deadline) break
      let execution = 0
      let planning = 0
      const plans: string[] = []
      for (const q of captured[i]) {
        // A statement that is an EXPLAIN already (the count's planner estimate) is not run again under EXPLAIN.
        if (/^\s*EXPLAIN\b/i.test(q.text)) continue
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, q.params)
        const lines = rows.map((r) => r['QUERY PLAN'])
        execution += Number(/Execution Time: ([\d.]+)/.exec(lines.join('\n'))?.[1] ?? 0)
        planning += Number(/Planning Time: ([\d.]+)/.exec(lines.join('\n'))?.[1] ?? 0)
        plans.push(`${q.text.replace(/\s+/g, ' ').trim()}\n  params: ${JSON.stringify(q.params)}\n${lines.join('\n')}`)
      }
      runs.push({ execution, planning, plan: plans.join('\n\n') })
    }
    const byExecution = [...runs].sort((a, b) => a.execution - b.execution)
    const median = byExecution[Math.floor((byExecution.length - 1) / 2)]
    return { execution: median.execution, planning: median.planning, plan: byExecution[byExecution.length - 1].plan }
  } finally {
    await client.end()
  }
}

export async function runScenario(scenario: Scenario, sink: CaptureSink, url: string, budget: Budget): Promise<ScenarioResult> {
  const { api, captured, bytes, items } = await timeScenario(scenario, sink, budget)
  const sql = await replaySql(url, captured, budget.seconds)
  const explain = await explainSql(url, captured, budget.seconds)
  return { name: scenario.name, target: scenario.target, api, sql, explain, bytes, items, queriesPerRequest: captured[0]?.length ?? 0 }
}

const f = (n: number) => (Number.isNaN(n) ? '—' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toString())

export function formatResults(results: ScenarioResult[]): string {
  const head = ['scenario', 'n', 'API p50', 'p95', 'p99', 'SQL p50', 'p95', 'p99', 'EXPLAIN exec', 'plan', 'stmts', 'target p95', 'items', 'KiB', '']
  const rows = results.map((r) => {
    const api = [...r.api].sort((a, b) => a - b)
    const sql = [...r.sql].sort((a, b) => a - b)
    const p95 = percentile(api, 95)
    return [
      r.name, String(api.length), f(percentile(api, 50)), f(p95), f(percentile(api, 99)),
      f(percentile(sql, 50)), f(percentile(sql, 95)), f(percentile(sql, 99)),
      r.explain ? f(r.explain.execution) : '—', r.explain ? f(r.explain.planning) : '—', String(r.queriesPerRequest),
      `< ${r.target}`, String(r.items), (r.bytes / 1024).toFixed(1), p95 < r.target ? 'ok' : 'FAIL',
    ]
  })
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd()
  return [line(head), line(head.map((_, i) => '-'.repeat(widths[i]))), ...rows.map(line)].join('\n')
}
