import 'server-only'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { applyMigrations, loadMigrations } from './migrate'
import type { Sql } from './sql'

/** The bookkeeping both sides keep for themselves: the target is migrated, never copied into. */
const MIGRATIONS_TABLE = '_lazarus_migrations'
/** Rows per statement: one JSON document of a few MB at most for the largest rows (message bodies). */
const BATCH_ROWS = 500

export type MoveDatabaseOptions = {
  /** The embedded database being left (docs/operations.md#moving-off-the-embedded-database). */
  from: Sql
  /** An empty PostgreSQL database; migrated here first. */
  to: Sql
  onTable?: (table: string, rows: number) => void
}

export type MovedTable = { table: string; rows: number }

type Column = { name: string; identity: boolean }

/**
 * Copies every row of every Lazarus table from one database to another, exactly: each row travels as the JSON of the
 * whole row (`row_to_json`, which keeps a `json` column's text as stored, header order included, and writes `bytea` in
 * hex) and is rebuilt on the target by `json_populate_recordset` of the same table type, so every value keeps its
 * type. Ids are kept (identity columns are written with OVERRIDING SYSTEM VALUE) and every sequence is set to continue
 * after them. The target must have no tables; it is migrated and filled, tables parents first by their foreign keys, in
 * one transaction: a move that fails leaves it as empty as it was. The source is only read.
 */
export async function moveDatabase({ from, to, onTable }: MoveDatabaseOptions): Promise<MovedTable[]> {
  const migrations = await loadMigrations()
  await assertSameSchema(from, migrations.map((m) => m.name))
  const tables = await tablesInCopyOrder(from)
  const moved: MovedTable[] = []
  // One transaction, schema included (PostgreSQL's DDL is transactional): a move that fails leaves nothing behind.
  await to.transaction(async (tx) => {
    const { rows } = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)
    if (rows[0].n > 0) throw new AppError('conflict', 'The target database is not empty: it has tables. Move into a new, empty database (createdb).')
    await applyMigrations({ sql: tx, migrations })
    // The migrations seed a few rows (defaults, cursors); the source's own versions of them are copied instead.
    for (const table of [...tables].reverse()) await tx.query(`DELETE FROM ${ident(table)}`)
    for (const table of tables) {
      const rows = await copyTable({ from, to: tx, table })
      moved.push({ table, rows })
      onTable?.(table, rows)
    }
    await continueSequences({ from, to: tx })
  })
  return moved
}

/** The source must be at exactly the migrations this version applies to the target, or the rows would not fit. */
async function assertSameSchema(from: Sql, expected: string[]): Promise<void> {
  const { rows } = await from.query<{ name: string }>(`SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY name`)
  const applied = rows.map((r) => r.name)
  const missing = expected.filter((name) => !applied.includes(name))
  const unknown = applied.filter((name) => !expected.includes(name))
  if (missing.length || unknown.length) {
    throw new AppError(
      'conflict',
      `The source database is not at this version's schema (${missing.length ? `missing ${missing.join(', ')}` : ''}${missing.length && unknown.length ? '; ' : ''}${unknown.length ? `unknown ${unknown.join(', ')}` : ''}): start this version of Lazarus on it once, then move it.`,
    )
  }
}

/** Every table of the public schema but the migrations' own, each after the tables its foreign keys point to. */
async function tablesInCopyOrder(sql: Sql): Promise<string[]> {
  const { rows: tables } = await sql.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> $1 ORDER BY c.relname`,
    [MIGRATIONS_TABLE],
  )
  const { rows: references } = await sql.query<{ child: string; parent: string }>(
    `SELECT ch.relname AS child, pa.relname AS parent FROM pg_constraint k
       JOIN pg_class ch ON ch.oid = k.conrelid JOIN pg_class pa ON pa.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = ch.relnamespace
      WHERE k.contype = 'f' AND n.nspname = 'public' AND ch.oid <> pa.oid`,
  )
  const ordered: string[] = []
  const placed = new Set<string>()
  const visit = (table: string, path: string[]) => {
    if (placed.has(table)) return
    if (path.includes(table)) throw new Error(`foreign keys form a cycle: ${[...path, table].join(' → ')}`)
    for (const { parent } of references.filter((r) => r.child === table)) visit(parent, [...path, table])
    placed.add(table)
    ordered.push(table)
  }
  for (const { name } of tables) visit(name, [])
  return ordered
}

async function columnsOf(sql: Sql, table: string): Promise<Column[]> {
  const { rows } = await sql.query<{ name: string; identity: boolean; generated: boolean }>(
    `SELECT a.attname AS name, a.attidentity <> '' AS identity, a.attgenerated <> '' AS generated
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relname = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  )
  // A generated column is computed again on the target from the columns copied.
  return rows.filter((r) => !r.generated).map(({ name, identity }) => ({ name, identity }))
}

async function copyTable({ from, to, table }: { from: Sql; to: Sql; table: string }): Promise<number> {
  const columns = await columnsOf(from, table)
  const list = columns.map((c) => ident(c.name)).join(', ')
  const overriding = columns.some((c) => c.identity) ? 'OVERRIDING SYSTEM VALUE' : ''
  let copied = 0
  // Batches in the physical order of a snapshot-free read: the source is not written to while it is moved (Lazarus
  // stopped), so ctid order is stable and every row is read once.
  for (;;) {
    const { rows } = await from.query<{ batch: string | null }>(
      `SELECT json_agg(row_to_json(t))::text AS batch FROM (SELECT * FROM ${ident(table)} ORDER BY ctid LIMIT ${BATCH_ROWS} OFFSET ${copied}) t`,
    )
    const batch = rows[0]?.batch
    if (!batch) return copied
    const inserted = await to.execute(
      `INSERT INTO ${ident(table)} (${list}) ${overriding} SELECT ${list} FROM json_populate_recordset(NULL::${ident(table)}, $1::json)`,
      [batch],
    )
    copied += inserted
    if (inserted < BATCH_ROWS) return copied
  }
}

/** Identity columns and free-standing sequences continue where the source's would have. */
async function continueSequences({ from, to }: { from: Sql; to: Sql }): Promise<void> {
  const { rows } = await from.query<{ name: string; last_value: string | null }>(
    `SELECT sequencename AS name, last_value::text FROM pg_sequences WHERE schemaname = 'public'`,
  )
  for (const { name, last_value } of rows) {
    if (last_value === null) continue
    await to.query('SELECT setval($1::regclass, $2::bigint, true)', [ident(name), last_value])
  }
}

/** A quoted identifier; names come from the catalogue, but a name is never pasted into SQL unquoted. */
function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
