import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyMigrations, loadMigrations, type Migration } from '@/lib/server/platform/db/migrate'
import type { Sql } from '@/lib/server/platform/db/sql'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'

/**
 * lib/server/platform/db/migrate.ts on a fresh database of each engine: every file of prisma/migrations applies (the
 * same SQL on PostgreSQL and PGlite, docs/decisions/0002), once, in name order; pending ones in one transaction, so a
 * failing file leaves the database as it was; an edited file that was applied stops everything. Two processes
 * migrating one PostgreSQL database at once: tests/integration/migrate-concurrently.test.ts.
 */
// Two fresh databases for the whole file: opening one is the slow part on PGlite, so tests that start where the one
// before left the database go on with it, in order.
let first: EngineDb
let second: EngineDb
beforeAll(async () => {
  first = await createEngineDb(undefined, { migrate: false })
  second = await createEngineDb(undefined, { migrate: false })
})
afterAll(async () => {
  await first?.drop()
  await second?.drop()
})

const recorded = async (sql: Sql) => (await sql.query<{ name: string }>('SELECT name FROM _lazarus_migrations ORDER BY name')).rows.map((r) => r.name)
const tableExists = async (sql: Sql, table: string) => (await sql.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])).rows[0].t !== null
const migration = (name: string, sql: string): Migration => ({ name, sql, sha256: `test-${name}-${sql.length}` })

describe('applyMigrations', () => {
  it('applies every migration once, in name order, onto a fresh database, and nothing the second time', async () => {
    const all = await loadMigrations()
    expect(all.length).toBeGreaterThan(20)
    const names = all.map((m) => m.name)
    expect(names).toEqual([...names].sort())

    expect(await applyMigrations({ sql: first.sql })).toEqual(names)
    expect(await recorded(first.sql)).toEqual(names)
    // The schema is there, with what the embedded engine must provide as well: pg_trgm's operator class.
    expect(await tableExists(first.sql, 'dead_letter_search')).toBe(true)
    const { rows } = await first.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'`)
    expect(rows[0].n).toBe(1)

    expect(await applyMigrations({ sql: first.sql })).toEqual([])
    expect(await recorded(first.sql)).toHaveLength(names.length)
  })

  it('applies the pending migrations in one transaction: one that fails leaves none of them behind', async () => {
    const all = await loadMigrations()
    const good = migration('99990000_good', 'CREATE TABLE applied_with_a_broken_one (id int)')
    const broken = migration('99990001_broken', 'CREATE TABLE half_done (id int); SELECT 1 / 0')
    await expect(applyMigrations({ sql: first.sql, migrations: [...all, good, broken] })).rejects.toThrow(/division by zero/)
    expect(await tableExists(first.sql, 'applied_with_a_broken_one')).toBe(false)
    expect(await tableExists(first.sql, 'half_done')).toBe(false)
    expect(await recorded(first.sql)).toHaveLength(all.length)
  })

  it('refuses a migration edited after it was applied, and applies nothing else', async () => {
    const all = await loadMigrations()
    const edited = { ...all[1], sql: `${all[1].sql}\n-- edited`, sha256: 'edited' }
    const next = migration('99990000_next', 'CREATE TABLE after_the_edit (id int)')
    await expect(applyMigrations({ sql: first.sql, migrations: [all[0], edited, ...all.slice(2), next] })).rejects.toThrow(
      `Migration ${all[1].name} was edited after it was applied (checksum mismatch); add a new migration instead`,
    )
    expect(await tableExists(first.sql, 'after_the_edit')).toBe(false)
  })

  it('rolls a fresh database back to empty, bookkeeping table included, when its first run fails', async () => {
    const all = await loadMigrations()
    await expect(applyMigrations({ sql: second.sql, migrations: [...all.slice(0, 2), migration('99990001_broken', 'SELECT 1 / 0')] })).rejects.toThrow(/division by zero/)
    expect(await tableExists(second.sql, '_lazarus_migrations')).toBe(false)
    expect(await tableExists(second.sql, 'sources')).toBe(false)
  })

  it('applies only what is pending when the database is behind', async () => {
    const all = await loadMigrations()
    // Nothing the failed first run did stands in the way.
    expect(await applyMigrations({ sql: second.sql, migrations: all.slice(0, 3) })).toEqual(all.slice(0, 3).map((m) => m.name))
    expect(await applyMigrations({ sql: second.sql, migrations: all })).toEqual(all.slice(3).map((m) => m.name))
    expect(await recorded(second.sql)).toEqual(all.map((m) => m.name))
  })
})
