/**
 * `npm run db:move -- --to postgres://…`: copies the embedded database (under LAZARUS_DATA_DIR, the one `npm start`
 * uses without DATABASE_URL) into an empty PostgreSQL database, every row and id
 * (docs/operations.md#moving-off-the-embedded-database). Stop Lazarus first: the embedded database is locked while a
 * process has it open, and this command says so.
 */
import { parseArgs } from 'node:util'
import pg from 'pg'
import { z } from 'zod'
import { openDb } from '@/lib/server/platform/db'
import { moveDatabase } from '@/lib/server/platform/db/move-database'
import { pgSql } from '@/lib/server/platform/db/sql'
import { logger } from '@/lib/server/platform/log'
import { preferBuiltMigrations } from '@/lib/server/platform/runtime/built-dir'

const log = logger('move')
const targetSchema = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// connection string')

function fail(message: string, code: number): never {
  log.error(message)
  process.exit(code)
}

preferBuiltMigrations()
const { values } = parseArgs({ options: { to: { type: 'string' } }, strict: true })
const target = targetSchema.safeParse(values.to)
if (!target.success) fail(`usage: npm run db:move -- --to postgres://user:password@host:5432/database (--to ${target.error.issues[0].message})`, 64)
if (process.env.DATABASE_URL) fail('db:move copies the embedded database: unset DATABASE_URL (the target is --to)', 64)

// Opening the embedded database also brings it to this version's schema, as starting Lazarus on it would.
const from = await openDb()
const pool = new pg.Pool({ connectionString: target.data, max: 1, application_name: 'lazarus-move' })
try {
  const moved = await moveDatabase({ from: from.sql, to: pgSql(pool), onTable: (table, rows) => log.info(`copied ${table}`, { rows }) })
  const shown = new URL(target.data)
  if (shown.password) shown.password = '***'
  log.info(`moved ${moved.reduce((sum, t) => sum + t.rows, 0)} rows in ${moved.length} tables: start Lazarus with DATABASE_URL=${shown.toString()}`)
} catch (error) {
  fail(`move failed, the target is unchanged: ${(error as Error).message}`, 1)
} finally {
  await pool.end()
  await from.close()
}
