import 'server-only'
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { Sql } from './sql'

export type Migration = { name: string; sql: string; sha256: string }

export function migrationsDir(): string {
  return process.env.LAZARUS_MIGRATIONS_DIR ?? path.resolve(process.cwd(), 'prisma/migrations')
}

export async function loadMigrations(dir = migrationsDir()): Promise<Migration[]> {
  // The directory is known only at run time (LAZARUS_MIGRATIONS_DIR); the build copies prisma/migrations beside the server.
  const entries = await readdir(/*turbopackIgnore: true*/ dir, { withFileTypes: true })
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort()
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(/*turbopackIgnore: true*/ path.join(dir, name, 'migration.sql'), 'utf8')
      return { name, sql, sha256: createHash('sha256').update(sql).digest('hex') }
    }),
  )
}

// Any constant works; it only has to be the same in every Lazarus process sharing a database.
const MIGRATION_LOCK_KEY = 7_203_114_451

/**
 * Applies the pending migrations in name order, all of them in one transaction: a migration that fails rolls back
 * every one applied with it, so the database is left at the schema it had, never between two. The transaction first
 * takes an advisory lock and only then creates the bookkeeping table `_lazarus_migrations` if it is missing, so
 * several processes starting at once on one database (even a fresh one: CREATE TABLE IF NOT EXISTS is not safe
 * against itself running concurrently, it can fail on pg_type's unique index) apply each file exactly once, one after
 * the other; the ones that wait find nothing left to do. PGlite is one connection in one process and takes no lock.
 * An edited, already-applied file stops start-up: the database no longer matches what the code expects.
 * Returns the names of the migrations this call applied.
 */
export async function applyMigrations({ sql, migrations }: { sql: Sql; migrations?: Migration[] }): Promise<string[]> {
  const all = migrations ?? (await loadMigrations())
  return sql.transaction(async (tx) => {
    if (tx.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
    await tx.exec(`CREATE TABLE IF NOT EXISTS _lazarus_migrations (
      name text PRIMARY KEY, sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const { rows } = await tx.query<{ name: string; sha256: string }>('SELECT name, sha256 FROM _lazarus_migrations')
    const applied = new Map(rows.map((r) => [r.name, r.sha256]))
    const done: string[] = []
    for (const migration of all) {
      const previous = applied.get(migration.name)
      if (previous === migration.sha256) continue
      if (previous) {
        throw new Error(`Migration ${migration.name} was edited after it was applied (checksum mismatch); add a new migration instead`)
      }
      await tx.exec(migration.sql)
      await tx.query('INSERT INTO _lazarus_migrations (name, sha256) VALUES ($1, $2)', [migration.name, migration.sha256])
      done.push(migration.name)
    }
    return done
  })
}
