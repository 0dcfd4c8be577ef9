import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { openDb, type Db } from '@/lib/server/platform/db'
import { moveDatabase } from '@/lib/server/platform/db/move-database'
import { pgSql, type Sql } from '@/lib/server/platform/db/sql'
import { withOutput } from '../helpers/child-output'
import { createEmptyPostgres } from '../helpers/engine-db'
import { endPool } from '../helpers/end-pool'
import { insertSource, replayJobOf, storeRows } from '../helpers/store-seed'

/**
 * `npm run db:move -- --to postgres://…` (docs/operations.md#moving-off-the-embedded-database): a populated embedded
 * database copied into an empty PostgreSQL one by the built command, compared table by table, row by row, as text (so
 * a `json` header table keeps its key order and a body its bytes). Runs in the stores-pglite project only: the move
 * starts from the embedded database.
 */
type Digest = Record<string, { rows: number; md5: string }>

let dataDir: string
let source: Db
let target: { url: string; drop(): Promise<void> }
let targetPool: pg.Pool
let before: Digest
let sourceSequences: Record<string, string | null>

/** Every table's row count and the md5 of its rows' text, sorted, under one time zone; the migrations' own table aside. */
async function digest(sql: Sql): Promise<Digest> {
  await sql.query(`SET TimeZone TO 'UTC'`)
  const { rows: tables } = await sql.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'r' AND relname <> '_lazarus_migrations' ORDER BY relname`,
  )
  const out: Digest = {}
  for (const { name } of tables) {
    const { rows } = await sql.query<{ rows: string; md5: string }>(
      `SELECT count(*)::text AS rows, md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) AS md5 FROM (SELECT t::text AS r FROM "${name}" t) x`,
    )
    out[name] = { rows: Number(rows[0].rows), md5: rows[0].md5 }
  }
  return out
}

async function sequences(sql: Sql): Promise<Record<string, string | null>> {
  const { rows } = await sql.query<{ name: string; last_value: string | null }>(`SELECT sequencename AS name, last_value::text FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1`)
  return Object.fromEntries(rows.map((r) => [r.name, r.last_value]))
}

describe('moving off the embedded database', () => {
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'lazarus-move-'))
    const templates = inject('pgliteTemplates')
    if (!templates) throw new Error('runs in the stores-pglite project, which provides the PGlite templates')
    await cp(path.join(templates.migrated, 'pglite'), path.join(dataDir, 'pglite'), { recursive: true })
    source = await openDb({ dataDir })
    const sql = source.sql
    // A bit of everything: messages with typed headers and a binary body in two sources, a replay job and its items,
    // a message resolved, an alert rule.
    const dlq = await insertSource(sql, { queue: 'orders.dlq' })
    const other = await insertSource(sql, { queue: 'billing.dlq' })
    const ids = await storeRows(sql, dlq, [
      { headersJson: '{"z-last":{"type":"long","value":"7"},"a-first":{"type":"string","value":"x"}}' },
      { body: Buffer.from([0x00, 0xff, 0x80, 0x7f]), bodyEncoding: 'binary', bodyPreview: null },
      { errorType: 'java.lang.IllegalStateException', errorMessage: 'order 42 is closed', signature: 'v1:closed', title: 'IllegalStateException: order is closed' },
    ])
    await storeRows(sql, other, [{ service: 'billing' }, { service: 'billing' }])
    await replayJobOf(sql, ids.slice(0, 2))
    await sql.query(
      `INSERT INTO dead_letter_states (dead_letter_id, status, status_reason, failed_at) SELECT id, 'resolved', 'fixed by hand', failed_at FROM dead_letters WHERE id = $1::bigint
       ON CONFLICT (dead_letter_id) DO UPDATE SET status = 'resolved', status_reason = 'fixed by hand'`,
      [ids[2]],
    )
    await sql.query(`INSERT INTO alert_rules (kind, created_by) VALUES ('new-group', 'move-test')`)
    before = await digest(sql)
    sourceSequences = await sequences(sql)
    await source.close()
    target = await createEmptyPostgres('lazarus_move')
    targetPool = new pg.Pool({ connectionString: target.url, max: 1 })
  })

  afterAll(async () => {
    if (targetPool) await endPool(targetPool)
    await target?.drop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  it('`db:move` copies every row of every table, ids and sequences included, into an empty PostgreSQL database', async () => {
    // The command production runs (lib/cli/move.ts, built), on the data folder `npm start` would use.
    const env: NodeJS.ProcessEnv = { ...process.env, LAZARUS_DATA_DIR: dataDir, LAZARUS_LOG_LEVEL: 'info' }
    delete env.DATABASE_URL
    const move = withOutput(spawn(process.execPath, [path.join(inject('processBundles'), 'move.mjs'), '--to', target.url], { env, stdio: ['ignore', 'pipe', 'pipe'] }))
    const [code] = await once(move, 'exit')
    expect(code, move.output()).toBe(0)
    expect(move.output()).toContain('start Lazarus with DATABASE_URL=')

    const sql = pgSql(targetPool)
    expect(await digest(sql)).toEqual(before)
    expect(Object.values(before).some((t) => t.rows > 0)).toBe(true)
    expect(await sequences(sql)).toEqual(sourceSequences)
    // New rows continue after the copied ids.
    const [next] = await storeRows(sql, (await sql.query<{ id: string }>(`SELECT id::text FROM sources WHERE queue = 'orders.dlq'`)).rows[0].id, [{}])
    expect(BigInt(next)).toBeGreaterThan(BigInt(sourceSequences.dead_letters_id_seq ?? '0'))
  })

  it('refuses a target that is not empty, and leaves it as it was', async () => {
    const sql = pgSql(targetPool)
    const held = await digest(sql)
    const again = await openDb({ dataDir })
    try {
      await expect(moveDatabase({ from: again.sql, to: sql })).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('not empty') })
    } finally {
      await again.close()
    }
    expect(await digest(sql)).toEqual(held)
  })

  it('leaves no table behind when it fails midway', async () => {
    const fresh = await createEmptyPostgres('lazarus_move_fail')
    const pool = new pg.Pool({ connectionString: fresh.url, max: 1 })
    const again = await openDb({ dataDir })
    try {
      let copied = 0
      const breakAtThird = () => {
        if (++copied === 3) throw new Error('the connection broke')
      }
      await expect(moveDatabase({ from: again.sql, to: pgSql(pool), onTable: breakAtThird })).rejects.toThrow('the connection broke')
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)
      expect(rows[0].n).toBe(0)
    } finally {
      await again.close()
      await endPool(pool)
      await fresh.drop()
    }
  })

  it('refuses to run against DATABASE_URL, and without a target', async () => {
    for (const [args, env, message] of [
      [['--to', target.url], { DATABASE_URL: target.url }, 'unset DATABASE_URL'],
      [[], {}, 'usage: npm run db:move -- --to postgres://'],
    ] as const) {
      const child = withOutput(spawn(process.execPath, [path.join(inject('processBundles'), 'move.mjs'), ...args], { env: { ...process.env, LAZARUS_DATA_DIR: dataDir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }))
      const [code] = await once(child, 'exit')
      expect(code).toBe(64)
      expect(child.output()).toContain(message)
    }
  })
})
