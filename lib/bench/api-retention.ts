/**
 * Retention at scale (issue 25, docs/performance.md#ten-million-messages): on a database `bench:api` loaded, the
 * replayed and resolved messages whose status changed more than `days` ago are deleted by the retention engine's own
 * batches (deleteExpiredBatch, at full speed with no rest between batches: the worst case for everything beside it),
 * while a reader keeps asking for a page of the list and a writer takes the largest group's row as the drainer does for
 * every batch it stores. Then VACUUM (what autovacuum would do), then as many rows as were deleted are stored again.
 *
 * What it shows: how long one batch holds its locks (the longest the drainer can wait behind retention), what the
 * reader and the writer saw during the deletes against before them, and whether the space the deletes freed is used
 * again by new rows (no bloat) or the tables grow.
 */
import type { Db } from '@/lib/server/platform/db'
import { deleteExpiredBatch } from '@/lib/server/engines/retention/retention-store'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import { percentile } from './api-measure'
import { fmt } from './bench-support'

export type MeasureRetentionOptions = {
  db: Db
  /** LAZARUS_RETENTION_DAYS as the bench sets it: replayed and resolved messages older than this go. */
  days: number
  /** One request of the list, as the page makes it; rejects unless it answered. */
  readPage: () => Promise<void>
  /** The group whose row the writer takes, as the drainer does for each batch it stores into that group. */
  groupId: string
  log: (line: string) => void
}

const TABLES = ['dead_letters', 'dead_letter_search', 'dead_letter_states'] as const
type Sizes = Record<(typeof TABLES)[number], { heap: number; toast: number; indexes: number; total: number }>

/** The retention engine's production batch (run-retention.ts). */
const BATCH_SIZE = 1000
const REFILL_CHUNK = 50_000
const BASELINE_READS = 100

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`
const ms = (value: number) => `${value.toFixed(1)} ms`
const sorted = (values: number[]) => [...values].sort((a, b) => a - b)
const spread = (values: number[]) => {
  const s = sorted(values)
  return s.length ? `p50 ${ms(percentile(s, 50))}, p95 ${ms(percentile(s, 95))}, max ${ms(s.at(-1)!)} (${fmt(s.length)})` : 'none'
}

async function sizes(db: Db): Promise<Sizes> {
  const { rows } = await db.background.query<{ name: (typeof TABLES)[number]; heap: string; toast: string; indexes: string; total: string }>(
    `SELECT c.relname AS name, pg_relation_size(c.oid) AS heap, coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) AS toast,
       pg_indexes_size(c.oid) AS indexes, pg_total_relation_size(c.oid) AS total
     FROM pg_class c WHERE c.relname = ANY($1::text[]) AND c.relkind = 'r'`,
    [TABLES],
  )
  return Object.fromEntries(rows.map((r) => [r.name, { heap: Number(r.heap), toast: Number(r.toast), indexes: Number(r.indexes), total: Number(r.total) }])) as Sizes
}

/** The three tables' bytes together. */
const totalOf = (s: Sizes) => TABLES.reduce((sum, t) => sum + s[t].total, 0)

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await action()
  return performance.now() - started
}

/** Runs `action` over and over until `until` settles, recording each call's duration. */
async function loopUntil(until: Promise<unknown>, action: () => Promise<unknown>, pauseMs: number): Promise<number[]> {
  let done = false
  void until.finally(() => { done = true })
  const durations: number[] = []
  while (!done) {
    durations.push(await timed(action))
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs))
  }
  return durations
}

/** The drainer's per-batch lock on a group row (store-batch.ts takes its groups FOR UPDATE in id order). */
function takeGroupRow(db: Db, groupId: string): () => Promise<void> {
  return () => db.sql.transaction(async (tx) => {
    await tx.query('SELECT id FROM error_groups WHERE id = $1::bigint FOR UPDATE', [groupId])
  })
}

/** Stores `count` rows again, copies of the newest, through the search backlog as the drainer and indexer do. */
async function refill(db: Db, count: number): Promise<void> {
  const { rows: columns } = await db.background.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = 'dead_letters' AND column_name <> 'id' AND is_generated = 'NEVER'
     ORDER BY ordinal_position`,
  )
  const names = columns.map((c) => c.column_name)
  const select = names.map((n) => (n === 'fingerprint' ? `sha256(fingerprint || '\\x01'::bytea || int8send(id))` : n)).join(', ')
  const { rows: [{ max }] } = await db.background.query<{ max: string }>('SELECT max(id)::text AS max FROM dead_letters')
  for (let done = 0; done < count; done += REFILL_CHUNK) {
    const take = Math.min(REFILL_CHUNK, count - done)
    await db.background.transaction(async (tx) => {
      const { rows: [range] } = await tx.query<{ first: string; last: string }>(
        `WITH stored AS (
           INSERT INTO dead_letters (${names.join(', ')})
           SELECT ${select} FROM dead_letters WHERE id <= $1::bigint - $2::bigint ORDER BY id DESC LIMIT $3
           RETURNING id)
         SELECT min(id)::text AS first, max(id)::text AS last FROM stored`,
        [max, done, take],
      )
      await tx.query('INSERT INTO search_backlog (first_id, last_id) VALUES ($1::bigint, $2::bigint)', [range.first, range.last])
    })
  }
  while ((await indexSearchBacklog({ sql: db.background, ranges: 32 })).ranges > 0) {
    // Indexed as the background indexer would, at full speed.
  }
}

function sizeTable(steps: [string, Sizes][]): string[] {
  const lines: string[] = []
  for (const table of TABLES) {
    const cells = steps.map(([label, s]) => `${label} ${mib(s[table].total)} (heap ${mib(s[table].heap)}, toast ${mib(s[table].toast)}, indexes ${mib(s[table].indexes)})`)
    lines.push(`    ${table}: ${cells.join(' → ')}`)
  }
  const first = totalOf(steps[0][1])
  const last = totalOf(steps.at(-1)![1])
  lines.push(`    the three together: ${steps.map(([label, s]) => `${label} ${mib(totalOf(s))}`).join(' → ')}; after storing the deleted count again ${((last / first - 1) * 100).toFixed(1)} % against before retention`)
  return lines
}

/** Runs the retention phase and prints its report through `log`. */
export async function measureRetention({ db, days, readPage, groupId, log }: MeasureRetentionOptions): Promise<void> {
  log(`\nRetention (replayed and resolved messages older than ${days} days, batches of ${fmt(BATCH_SIZE)}, no rest between them):`)
  // The load draws statuses but not when they changed: a message was replayed or resolved a day after it failed.
  const setup = await timed(async () => {
    await db.background.query(`UPDATE dead_letter_states SET status_changed_at = failed_at + interval '1 day' WHERE status IN ('replayed', 'resolved') AND status_changed_at IS NULL`)
    await db.background.query('VACUUM (ANALYZE) dead_letter_states')
  })
  const cutoff = new Date(Date.now() - days * 86_400_000)
  const { rows: [{ eligible, stored }] } = await db.background.query<{ eligible: number; stored: number }>(
    `SELECT (SELECT count(*) FROM dead_letter_states WHERE status IN ('replayed', 'resolved') AND status_changed_at < $1)::float8 AS eligible,
       (SELECT count(*) FROM dead_letters)::float8 AS stored`,
    [cutoff],
  )
  log(`  ${fmt(eligible)} of ${fmt(stored)} messages eligible (status times set in ${(setup / 1000).toFixed(1)} s)`)
  const before = await sizes(db)

  const baselineReads: number[] = []
  const baselineWrites: number[] = []
  for (let i = 0; i < BASELINE_READS; i++) {
    baselineReads.push(await timed(readPage))
    baselineWrites.push(await timed(takeGroupRow(db, groupId)))
  }

  const batches: number[] = []
  let deleted = 0
  const started = performance.now()
  const deleting = (async () => {
    for (;;) {
      let removed = 0
      batches.push(await timed(async () => { removed = await deleteExpiredBatch({ sql: db.background, cutoff, batchSize: BATCH_SIZE }) }))
      deleted += removed
      if (removed < BATCH_SIZE) break
    }
  })()
  const [reads, writes] = await Promise.all([
    loopUntil(deleting, readPage, 0),
    loopUntil(deleting, takeGroupRow(db, groupId), 20),
    deleting,
  ])
  const took = performance.now() - started
  log(`  deleted ${fmt(deleted)} in ${(took / 1000).toFixed(1)} s (${fmt(deleted / (took / 1000))} messages/s), ${fmt(batches.length)} batches`)
  log(`  one batch (its locks held for this long): ${spread(batches)}`)
  log(`  a page of the list: before ${spread(baselineReads)}; during ${spread(reads)}`)
  log(`  the drainer's lock on the largest group's row: before ${spread(baselineWrites)}; during ${spread(writes)}`)
  const afterDelete = await sizes(db)

  const vacuum = await timed(() => db.background.query(`VACUUM (ANALYZE) ${TABLES.join(', ')}`))
  log(`  VACUUM (ANALYZE) of the three tables, as autovacuum would run it: ${(vacuum / 1000).toFixed(1)} s`)
  const afterVacuum = await sizes(db)
  const refilled = await timed(() => refill(db, deleted))
  log(`  ${fmt(deleted)} messages stored again and indexed in ${(refilled / 1000).toFixed(1)} s`)
  const afterRefill = await sizes(db)
  log('  sizes:')
  for (const line of sizeTable([['before', before], ['deleted', afterDelete], ['vacuumed', afterVacuum], ['stored again', afterRefill]])) log(line)
}
