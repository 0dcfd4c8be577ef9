import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { inject } from 'vitest'
import { openDb, type Db } from '@/lib/server/platform/db'
import { composition } from '@/lib/server/platform/process/composition'
import { ADMIN_URL, createTestDb, databaseUrl } from './test-db'

/**
 * The two database engines Lazarus runs on: PostgreSQL (DATABASE_URL set) and the embedded PGlite that `npm start`
 * opens without it (docs/decisions/0002-pglite-when-database-url-is-unset.md). The store tests (tests/stores/) run
 * once on each: the Vitest projects stores-postgres and stores-pglite set LAZARUS_TEST_ENGINE (vitest.config.ts).
 */
export type Engine = Db['sql']['kind']

export type EngineDb = Db & { engine: Engine; drop(): Promise<void> }

/** The engine of the running stores project. */
export function testEngine(): Engine {
  const engine = process.env.LAZARUS_TEST_ENGINE
  if (engine !== 'postgres' && engine !== 'pglite') {
    throw new Error(`LAZARUS_TEST_ENGINE is ${engine ?? 'unset'}: run tests/stores/ through the stores-postgres or stores-pglite project`)
  }
  return engine
}

/** A fresh PostgreSQL database with nothing in it (no migrations); drop() removes it. */
export async function createEmptyPostgres(prefix = 'lazarus_store'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: ADMIN_URL })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await admin(`CREATE DATABASE ${name}`)
  return { url: databaseUrl(name), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

/**
 * A fresh database on `engine`, installed as the process-wide one: a new PostgreSQL database, or a new PGlite (with
 * pg_trgm) in a temporary directory, opened by the same `openDb` as production. Migrated unless `migrate` is false.
 * In the stores-pglite project the directory starts as a copy of a template (tests/helpers/pglite-templates.ts).
 */
export async function createEngineDb(engine: Engine = testEngine(), options: { migrate?: boolean } = {}): Promise<EngineDb> {
  const migrate = options.migrate ?? true
  if (engine === 'postgres') {
    if (migrate) {
      const db = await createTestDb('lazarus_store')
      return { ...db, engine }
    }
    const empty = await createEmptyPostgres()
    return installed(await openDb({ databaseUrl: empty.url, migrate: false }), engine, empty.drop)
  }
  // openDb opens DATABASE_URL whenever it is set, data directory or not.
  if (process.env.DATABASE_URL) throw new Error('DATABASE_URL is set: the PGlite store tests need it unset')
  const dataDir = await mkdtemp(path.join(tmpdir(), 'lazarus-store-'))
  const templates = inject('pgliteTemplates')
  if (templates) await cp(path.join(migrate ? templates.migrated : templates.empty, 'pglite'), path.join(dataDir, 'pglite'), { recursive: true })
  const db = await openDb({ dataDir, migrate })
  return installed(db, engine, () => rm(dataDir, { recursive: true, force: true }))
}

function installed(db: Db, engine: Engine, remove: () => Promise<void>): EngineDb {
  composition().setDb(db)
  return {
    ...db,
    engine,
    async drop() {
      composition().setDb(undefined)
      // A test may have closed it already; what matters is that the database goes.
      await db.close().catch(() => {})
      await remove()
    },
  }
}
