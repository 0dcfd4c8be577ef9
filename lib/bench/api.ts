/**
 * npm run bench:api — read-path speed at scale (issue 3).
 *
 * Creates a fresh database, applies the app's migrations, loads BENCH_ROWS (default 1,000,000) synthetic dead
 * letters with realistic skew (lib/bench/api-load.ts), then times the API's read routes called in-process —
 * the route handlers from app/api/** against the loaded database, so the figures are server time without
 * network — and beside each the same SQL, captured from the route and replayed bare through pg and through
 * EXPLAIN ANALYZE. Ends with table sizes and the index list; the database is dropped unless BENCH_KEEP=1.
 *
 * Options: BENCH_ROWS (default 1000000), BENCH_KEEP=1, BENCH_REQUESTS (timed requests per scenario, default 200),
 * BENCH_WARMUP (default 20), BENCH_SCENARIO_SECONDS (time budget per scenario and phase, default 60),
 * BENCH_DEEP_PAGES (default 200), BENCH_PLANS=1 (print every plan, not only those of failed targets),
 * BENCH_DB=<name> (measure a database an earlier BENCH_KEEP=1 run loaded, after applying pending migrations;
 * nothing is loaded or dropped, and rates per minute are as old as that load; ranges a migration left in the search
 * backlog are indexed first, as the background indexer would, and the time it took is printed),
 * BENCH_ONLY=<regular expression> (time only the scenarios whose name matches, e.g. BENCH_ONLY='tenant|correlationId', or 'body' for the body fields),
 * BENCH_RETENTION_DAYS (default 14, as the load spreads failures over 30 days; 0 skips the retention phase,
 * lib/bench/api-retention.ts, which runs last because it deletes and stores rows).
 */
import { API_TOKEN_PREFIX } from '@/lib/server/auth/api-tokens'
import { authenticate } from '@/lib/server/auth/authenticate'
import { newSecret, secretHash } from '@/lib/server/auth/secret-token'
import { createSession } from '@/lib/server/auth/sessions'
import { getConfig } from '@/lib/server/platform/config'
import { openDb, type Db } from '@/lib/server/platform/db'
import { composition } from '@/lib/server/platform/process/composition'
import { requestFacts } from '@/lib/server/platform/request-facts'
import * as groupsRoute from '@/app/api/groups/route'
import * as groupRoute from '@/app/api/groups/[id]/route'
import * as messagesRoute from '@/app/api/messages/route'
import * as messageRoute from '@/app/api/messages/[id]/route'
import * as countRoute from '@/app/api/messages/count/route'
import { indexSearchBacklog, searchBacklogSize } from '@/lib/server/engines/search-indexer/search-index-store'
import { getGroup } from '@/lib/server/groups/get-group'
import { listMessages as listMessagesOf } from '@/lib/server/messages/list-messages'
import { listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { BODY_FIELD_EVERY, BODY_FIELD_POINTER, BODY_FIELD_VALUE, BODY_TERM, buildGroups, COMMON_TERM, MID_TERM, prng, RARE_TERM, SCOPED_PATTERN, scopedQueues, SOURCES, TENANT_COMMON, TENANT_RARE, type GroupSpec } from './api-catalog'
import { loadDataset } from './api-load'
import { capturingDb, formatResults, percentile, runScenario, type Budget, type CaptureSink, type Scenario, type ScenarioResult } from './api-measure'
import { storageReport } from './api-report'
import { measureRetention } from './api-retention'
import { fmt, freshDatabase } from './bench-support'

const reuse = process.env.BENCH_DB
const keep = process.env.BENCH_KEEP === '1' || reuse !== undefined
let rows = Number(process.env.BENCH_ROWS ?? 1_000_000)
const budget: Budget = {
  requests: Number(process.env.BENCH_REQUESTS ?? 200),
  warmup: Number(process.env.BENCH_WARMUP ?? 20),
  seconds: Number(process.env.BENCH_SCENARIO_SECONDS ?? 60),
}
const deepPages = Number(process.env.BENCH_DEEP_PAGES ?? 200)
const printAllPlans = process.env.BENCH_PLANS === '1'
const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null
const retentionDays = Number(process.env.BENCH_RETENTION_DAYS ?? 14)

const TARGETS = { groups: 100, page: 100, search: 500, detail: 30, header: 200 }

const base = 'http://lazarus.bench'
const noParams = { params: Promise.resolve({}) }
/**
 * Sign-in is on: every route call carries an operator's session cookie, as the browser's would, so each request pays
 * the session check; the scoped scenarios send a scoped operator's API token. Set in main() once the users exist.
 */
let credentials: { cookie: string; scopedToken: string } = { cookie: '', scopedToken: '' }
const signedIn = (path: string, as: 'operator' | 'scoped' = 'operator') =>
  new Request(`${base}${path}`, { headers: as === 'operator' ? { cookie: credentials.cookie } : { authorization: `Bearer ${credentials.scopedToken}` } })
const listMessages = (query: string, as: 'operator' | 'scoped' = 'operator') => messagesRoute.GET(signedIn(`/api/messages${query}`, as), noParams)

/** A user with one role (and its binding), straight in SQL: the bench's own fixture. */
async function benchUser(db: Db, email: string, role: 'operator', sourcePattern: string | null): Promise<string> {
  const { rows } = await db.sql.query<{ id: string }>(`INSERT INTO users (email, auth_source) VALUES ($1, 'local') ON CONFLICT DO NOTHING RETURNING id::text`, [email])
  const id = rows[0]?.id ?? (await db.sql.query<{ id: string }>('SELECT id::text FROM users WHERE email = $1', [email])).rows[0].id
  await db.sql.query(`DELETE FROM role_bindings WHERE user_id = $1::bigint`, [id])
  await db.sql.query(`INSERT INTO role_bindings (user_id, role, source_pattern, origin) VALUES ($1::bigint, $2, $3, 'manual')`, [id, role, sourcePattern])
  return id
}

async function json<T>(response: Promise<Response>): Promise<T> {
  const r = await response
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`)
  return (await r.json()) as T
}

type Page = { messages: { id: string; failedAt: string }[]; nextCursor: string | null }

/** Follows nextCursor `pages` pages deep and returns the query string of the last page reached. */
async function deepPageQuery(pages: number): Promise<{ query: string; depth: number; failedAt: string }> {
  let query = ''
  let depth = 0
  let failedAt = ''
  for (let page = 0; page < pages; page++) {
    const body = await json<Page>(listMessages(query))
    if (!body.nextCursor) break
    depth += body.messages.length
    failedAt = body.messages.at(-1)?.failedAt ?? failedAt
    query = `?cursor=${encodeURIComponent(body.nextCursor)}`
  }
  return { query, depth, failedAt }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** An existing bench database (BENCH_DB): never dropped. */
function existingDatabase(name: string): { url: string; drop(): Promise<void> } {
  const url = new URL(process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
  url.pathname = `/${name}`
  return { url: url.toString(), drop: async () => {} }
}

/** The world an earlier run loaded: group specs for its row count, ids by signature. */
async function loadedDataset(db: Db): Promise<{ groups: GroupSpec[]; groupIds: Map<number, string> }> {
  const { rows: [{ n }] } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letters')
  rows = n
  const groups = buildGroups(n)
  const { rows: ids } = await db.sql.query<{ signature: string; id: string }>('SELECT signature, id::text FROM error_groups')
  const bySignature = new Map(ids.map((r) => [r.signature, r.id]))
  return { groups, groupIds: new Map(groups.map((g) => [g.rank, bySignature.get(g.signature)!])) }
}

/**
 * What a migration left in the search backlog (a re-index), indexed as the background indexer would, at full speed:
 * the figures are of the index, not of a catch-up. Prints how long the re-index took.
 */
async function indexBacklog(db: Db): Promise<void> {
  const before = await searchBacklogSize({ sql: db.background })
  if (before.ranges === 0) return
  const started = performance.now()
  let rows = 0
  for (;;) {
    const pass = await indexSearchBacklog({ sql: db.background, ranges: 32 })
    rows += pass.rows
    if (pass.ranges === 0) break
  }
  const took = performance.now() - started
  console.log(`  search backlog (${fmt(before.ranges)} ranges) indexed: ${fmt(rows)} rows in ${seconds(took)} (${fmt(rows / (took / 1000))} rows/s, one connection)`)
  await db.background.query('VACUUM (ANALYZE) dead_letter_search')
}

/** The ids of the sources with these queue names, as a role binding's pattern resolves to them. */
async function sourceIdsOf(db: Db, queues: string[]): Promise<string[]> {
  const { rows } = await db.sql.query<{ id: string }>(`SELECT id::text FROM sources WHERE vhost = '/' AND queue = ANY($1::text[]) ORDER BY id`, [queues])
  return rows.map((r) => r.id)
}

async function main() {
  console.log(`bench:api — ${reuse ? `existing database ${reuse}` : `${fmt(rows)} dead letters`}; timed requests per scenario: ${budget.requests} after ${budget.warmup} warm-up (budget ${budget.seconds} s per phase)`)
  const database = reuse ? existingDatabase(reuse) : await freshDatabase('lazarus_bench_api')
  let db: Db | undefined
  const cleanUp = async () => {
    composition().setDb(undefined)
    await db?.close().catch(() => {})
    if (keep) console.log(`\nDatabase kept: ${database.url} (measure it again with BENCH_DB=${new URL(database.url).pathname.slice(1)})`)
    else await database.drop()
  }
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)))
  try {
    const started = performance.now()
    db = await openDb({ databaseUrl: database.url })
    const { rows: migrations } = await db.sql.query<{ name: string }>('SELECT name FROM _lazarus_migrations ORDER BY name')
    console.log(`database ${new URL(database.url).pathname.slice(1)}; migrations: ${migrations.map((m) => m.name).join(', ')}`)

    let load: { groups: GroupSpec[]; groupIds: Map<number, string> }
    if (reuse) {
      load = await loadedDataset(db)
      console.log(`\nReusing the loaded data (${fmt(rows)} rows); no load`)
      await indexBacklog(db)
    } else {
      console.log('\nLoading:')
      const loaded = await loadDataset(database.url, rows)
      for (const [phase, ms] of loaded.phases) console.log(`  ${phase}: ${seconds(ms)}`)
      const loadMs = loaded.phases.reduce((sum, [, ms]) => sum + ms, 0)
      console.log(`  total: ${seconds(loadMs)} (${fmt(rows / (loadMs / 1000))} rows/s overall)`)
      if (loaded.filled.length) console.log(`  NOT NULL columns without default, filled with neutral values: ${loaded.filled.join(', ')}`)
      load = loaded
    }

    const { rows: shape } = await db.sql.query<{ groups: number; largest: number; smallest: number; sources: number; min_id: string; max_id: string; from: Date; to: Date; statuses: string }>(`
      SELECT (SELECT count(*)::int FROM error_groups) AS groups, (SELECT max(count)::float8 FROM error_groups) AS largest,
        (SELECT min(count)::float8 FROM error_groups) AS smallest, (SELECT count(*)::int FROM sources) AS sources,
        (SELECT min(id)::text FROM dead_letters) AS min_id, (SELECT max(id)::text FROM dead_letters) AS max_id,
        (SELECT min(failed_at) FROM dead_letters) AS from, (SELECT max(failed_at) FROM dead_letters) AS to,
        (SELECT string_agg(status || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT status, count(*) AS n FROM message_statuses GROUP BY 1) s) AS statuses`)
    const s = shape[0]
    const { rows: arrivals } = await db.sql.query<{ n: number; per_source: number }>(
      'SELECT (SELECT count(*)::int FROM group_arrivals) AS n, (SELECT count(*)::int FROM group_source_arrivals) AS per_source',
    )
    console.log(`  ${s.groups} groups (largest ${fmt(s.largest)} rows = ${((s.largest / rows) * 100).toFixed(1)}%, smallest ${fmt(s.smallest)}), ${s.sources} sources, ` +
      `${fmt(arrivals[0].n)} per-minute arrival buckets (${fmt(arrivals[0].per_source)} per source); failed_at ${new Date(s.from).toISOString()} … ${new Date(s.to).toISOString()}; statuses: ${s.statuses}`)

    const operatorId = await benchUser(db, 'bench-operator@lazarus.bench', 'operator', null)
    const scopedId = await benchUser(db, 'bench-billing@lazarus.bench', 'operator', SCOPED_PATTERN)
    const session = await createSession({ sql: db.sql, userId: operatorId, method: 'local', limits: { idleMinutes: 600, maxHours: 24 }, ip: null, userAgent: null })
    const scopedToken = newSecret(API_TOKEN_PREFIX)
    await db.sql.query(`INSERT INTO api_tokens (name, token_hash, user_id, role, source_pattern) VALUES ('bench', $1, $2::bigint, 'operator', $3)`, [secretHash(scopedToken), scopedId, SCOPED_PATTERN])
    credentials = { cookie: `lazarus_session=${session.secret}`, scopedToken }

    const sink: CaptureSink = { current: null }
    composition().setDb(capturingDb(db, sink))

    const largeGroup = load.groupIds.get(1)!
    const smallSpec = load.groups.find((g) => g.rank === 47)!
    const smallGroup = load.groupIds.get(47)!
    const deep = await deepPageQuery(deepPages)
    console.log(`\nDeep page: ${deepPages} pages followed, ${fmt(deep.depth)} rows in, failed_at ${deep.failedAt}`)
    const random = prng(7)
    const minId = BigInt(s.min_id)
    const span = Number(BigInt(s.max_id) - minId) + 1
    const detailIds = Array.from({ length: budget.warmup + budget.requests }, () => (minId + BigInt(Math.floor(random() * span))).toString())
    // A caller restricted by a role binding: the team's sources, and one of the several sources the largest group fails in.
    const scoped = await sourceIdsOf(db, scopedQueues())
    const partQueue = SOURCES[load.groups[0].sourceIdx[0] - 1].queue
    const part = await sourceIdsOf(db, [partQueue])
    console.log(`Restricted callers: ${SCOPED_PATTERN} (${scoped.length} sources), ${partQueue} (1 of the largest group's ${load.groups[0].sourceIdx.length})`)

    // Header, property and x-death filters (README, "Filtering by header, property, body field or x-death"): a value most rows
    // carry, one a single row in the middle of the table carries, and an x-death count.
    const { rows: fieldValues } = await db.sql.query<{ message_id: string; correlation_id: string; service: string }>(
      `SELECT d.properties ->> 'messageId' AS message_id, coalesce(d.properties ->> 'correlationId', 'none') AS correlation_id, d.service
       FROM dead_letters d WHERE d.id = $1::bigint + $2::bigint / 2 AND d.properties ? 'messageId'`,
      [s.min_id, span],
    )
    const midRow = fieldValues[0] ?? { message_id: 'none', correlation_id: 'none', service: 'none' }
    // A scan of every stored header table: past the request pool's statement timeout from a few million messages on.
    const { rows: tenantRows } = await db.background.query<{ tenant: string | null; n: number }>(
      `SELECT d.headers -> 'tenant' ->> 'v' AS tenant, count(*)::int AS n FROM dead_letters d
       WHERE d.headers -> 'tenant' ->> 'v' IN ($1, $2) GROUP BY 1`,
      [TENANT_COMMON, TENANT_RARE],
    )
    const tenantCount = (t: string) => fmt(tenantRows.find((r) => r.tenant === t)?.n ?? 0)
    console.log(`Header h.tenant: ${TENANT_COMMON} on ${tenantCount(TENANT_COMMON)} rows, ${TENANT_RARE} on ${tenantCount(TENANT_RARE)}`)
    const fieldQuery = (params: Record<string, string>) => `?${new URLSearchParams(params)}`
    // The body field of 1 in BODY_FIELD_EVERY rows (api-catalog.ts): the ticket of the one nearest the table's middle.
    const midTicket = `INC-${Math.max(37, Math.round(rows / 2 / BODY_FIELD_EVERY) * BODY_FIELD_EVERY + 37)}`

    const scenarios: Scenario[] = [
      // The per-request sign-in check alone (session cookie → principal): the issue's budget is under a millisecond.
      { name: 'sign-in check (session cookie)', target: 1, call: async () => Response.json(await authenticate(signedIn('/'), requestFacts(signedIn('/')), { db: db!, config: getConfig() })) },
      { name: 'sign-in check (API token)', target: 1, call: async () => Response.json(await authenticate(signedIn('/', 'scoped'), requestFacts(signedIn('/', 'scoped')), { db: db!, config: getConfig() })) },
      { name: 'GET /api/groups', target: TARGETS.groups, call: () => groupsRoute.GET(signedIn('/api/groups'), noParams) },
      // What the groups page asks for first (issue 16): the groups with messages left to handle, by dead count.
      { name: 'GET /api/groups?view=attention&sort=dead', target: TARGETS.groups, call: () => groupsRoute.GET(signedIn('/api/groups?view=attention&sort=dead'), noParams) },
      // Not in the issue's list: a group's page, for the largest group over the longest range.
      { name: 'GET /api/groups/{largest}?range=30d', target: TARGETS.groups, call: () => groupRoute.GET(signedIn(`/api/groups/${largeGroup}?range=30d`), { params: Promise.resolve({ id: largeGroup }) }) },
      { name: 'messages, first page', target: TARGETS.page, call: () => listMessages('') },
      { name: `messages, page ${deepPages} (cursor)`, target: TARGETS.page, call: () => listMessages(deep.query) },
      { name: `messages, large group (${fmt(load.groups[0].rows)})`, target: TARGETS.page, call: () => listMessages(`?group=${largeGroup}`) },
      { name: `messages, small group (${fmt(smallSpec.rows)})`, target: TARGETS.page, call: () => listMessages(`?group=${smallGroup}`) },
      // Status filters: replayed is a few percent of every group's rows, held well under one percent.
      { name: 'messages, status=replayed', target: TARGETS.page, call: () => listMessages('?status=replayed') },
      { name: 'messages, status=held', target: TARGETS.page, call: () => listMessages('?status=held') },
      { name: `search rare q=${RARE_TERM}`, target: TARGETS.search, call: () => listMessages(`?q=${RARE_TERM}`) },
      // The same rows, by a name that sits ~150 characters into the body: found only if search covers that far.
      { name: `search body q=${BODY_TERM}`, target: TARGETS.search, call: () => listMessages(`?q=${BODY_TERM}`) },
      { name: `search common q=${COMMON_TERM}`, target: TARGETS.search, call: () => listMessages(`?q=${COMMON_TERM}`) },
      // Not in the issue's list: the band between the two, where neither a recent page nor the index is cheap.
      { name: `search mid q=${MID_TERM}`, target: TARGETS.search, call: () => listMessages(`?q=${MID_TERM}`) },
      { name: 'header h.x-first-death-reason=rejected (common)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'h.x-first-death-reason': 'rejected' })) },
      { name: `header h.x-first-death-reason=rejected & service=${midRow.service}`, target: TARGETS.page, call: () => listMessages(fieldQuery({ 'h.x-first-death-reason': 'rejected', service: midRow.service })) },
      { name: 'header h.x-first-death-reason=expired (rarer)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'h.x-first-death-reason': 'expired' })) },
      { name: 'property p.messageId=<one mid-table row>', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'p.messageId': midRow.message_id })) },
      { name: 'x-death death.count>=3', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'death.count>': '3' })) },
      // Issue 16, "Search by any header": an application header's equality under 200 ms p95, a rare and a common value,
      // alone and with a group or status filter, and a property that names one message. Prefix and exists: for information.
      { name: `header h.tenant=${TENANT_RARE} (rare)`, target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': TENANT_RARE })) },
      { name: `header h.tenant=${TENANT_COMMON} (common)`, target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': TENANT_COMMON })) },
      { name: `header h.tenant=${TENANT_RARE} & large group`, target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': TENANT_RARE, group: largeGroup })) },
      { name: `header h.tenant=${TENANT_COMMON} & small group`, target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': TENANT_COMMON, group: smallGroup })) },
      { name: `header h.tenant=${TENANT_COMMON} & status=held`, target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': TENANT_COMMON, status: 'held' })) },
      { name: 'header h.tenant=tenant-1999 (tail) & status=replayed', target: TARGETS.header, call: () => listMessages(fieldQuery({ 'h.tenant': 'tenant-1999', status: 'replayed' })) },
      { name: 'property p.correlationId=<one mid-table row>', target: TARGETS.header, call: () => listMessages(fieldQuery({ 'p.correlationId': midRow.correlation_id })) },
      // The count the list shows beside a filter ("select all N matching"): exact up to 10,000, for information.
      { name: `count h.tenant=${TENANT_RARE} (information)`, target: TARGETS.page, call: () => countRoute.GET(signedIn(`/api/messages/count${fieldQuery({ 'h.tenant': TENANT_RARE })}`), noParams) },
      { name: `count h.tenant=${TENANT_COMMON} (information)`, target: TARGETS.page, call: () => countRoute.GET(signedIn(`/api/messages/count${fieldQuery({ 'h.tenant': TENANT_COMMON })}`), noParams) },
      { name: 'header h.tenant^=tenant-199 (prefix, information)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'h.tenant^': 'tenant-199' })) },
      { name: 'header h.rbs2-msg-id?=true (exists, information)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'h.rbs2-msg-id?': 'true' })) },
      // Issue 28, "Body fields": an equality on a JSON body field only 1 % of the bodies have (every one of them holds
      // the value) under 200 ms p95, a value one body holds, with a group, and the count; prefix and exists for information.
      { name: `body b.${BODY_FIELD_POINTER}=${BODY_FIELD_VALUE} (1 % of bodies)`, target: TARGETS.header, call: () => listMessages(fieldQuery({ [`b.${BODY_FIELD_POINTER}`]: BODY_FIELD_VALUE })) },
      { name: 'body b./escalation/ticket=<one mid-table row>', target: TARGETS.header, call: () => listMessages(fieldQuery({ 'b./escalation/ticket': midTicket })) },
      { name: `body b.${BODY_FIELD_POINTER}=${BODY_FIELD_VALUE} & large group`, target: TARGETS.header, call: () => listMessages(fieldQuery({ [`b.${BODY_FIELD_POINTER}`]: BODY_FIELD_VALUE, group: largeGroup })) },
      { name: `count b.${BODY_FIELD_POINTER}=${BODY_FIELD_VALUE} (information)`, target: TARGETS.page, call: () => countRoute.GET(signedIn(`/api/messages/count${fieldQuery({ [`b.${BODY_FIELD_POINTER}`]: BODY_FIELD_VALUE })}`), noParams) },
      { name: 'body b./escalation/ticket^=INC-9 (prefix, information)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'b./escalation/ticket^': 'INC-9' })) },
      { name: 'body b./escalation?=true (exists, information)', target: TARGETS.page, call: () => listMessages(fieldQuery({ 'b./escalation?': 'true' })) },
      { name: 'GET /api/messages/{random id}', target: TARGETS.detail, call: (i) => messageRoute.GET(signedIn(`/api/messages/${detailIds[i % detailIds.length]}`), { params: Promise.resolve({ id: detailIds[i % detailIds.length] }) }) },
      // A caller whose role is limited to SCOPED_PATTERN, through the routes with its API token: the per-(group, source)
      // counters answer the groups list (lib/server/sources/source-scope.ts).
      { name: `GET /api/groups as ${SCOPED_PATTERN}`, target: TARGETS.groups, call: () => groupsRoute.GET(signedIn('/api/groups', 'scoped'), noParams) },
      { name: `messages, first page as ${SCOPED_PATTERN}`, target: TARGETS.page, call: () => listMessages('', 'scoped') },
      // One of the largest group's sources, as the operation runs for such a caller (their source ids given directly).
      { name: `messages, large group as ${partQueue}`, target: TARGETS.page, call: async () => Response.json(await listMessagesOf({ db: db!, query: listMessagesQuerySchema.parse({ group: largeGroup }), sourceIds: part })) },
      { name: `GET /api/groups/{largest}?range=30d as ${partQueue}`, target: TARGETS.groups, call: async () => Response.json(await getGroup({ db: db!, id: largeGroup, range: '30d', sourceIds: part })) },
    ]

    console.log('\nMeasuring (route handlers in-process; SQL = the same statements replayed bare through pg; EXPLAIN = ANALYZE execution,')
    console.log('plan = planning, both summed over the request\'s statements (stmts), median of up to 5 sampled requests):')
    const results: ScenarioResult[] = []
    for (const scenario of scenarios.filter((c) => !only || only.test(c.name))) {
      const result = await runScenario(scenario, sink, database.url, budget)
      results.push(result)
      console.log(`  ${scenario.name}: ${result.api.length} requests, API p50 ${percentile([...result.api].sort((a, b) => a - b), 50).toFixed(2)} ms`)
    }
    console.log(`\nAll times in ms (${fmt(rows)} rows):\n${formatResults(results)}`)

    const failed = results.filter((r) => percentile([...r.api].sort((a, b) => a - b), 95) >= r.target)
    for (const r of printAllPlans ? results : failed) {
      console.log(`\n${failed.includes(r) ? 'FAILED TARGET' : 'plan'}: ${r.name} — slowest sampled EXPLAIN (ANALYZE, BUFFERS):\n${r.explain?.plan ?? '(no SQL)'}`)
    }

    console.log(`\n${await storageReport(database.url)}`)
    if (retentionDays > 0) {
      composition().setDb(db)
      await measureRetention({
        db, days: retentionDays, groupId: largeGroup, log: (line) => console.log(line),
        readPage: async () => { await json(listMessages('')) },
      })
    }
    console.log(`\nbench process peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB; wall time ${seconds(performance.now() - started)}`)
  } finally {
    await cleanUp()
  }
}

await main()
