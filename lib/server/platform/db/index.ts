import 'server-only'
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import pg from 'pg'
import { PrismaPg } from '@prisma/adapter-pg'
import { PrismaClient } from '@/lib/generated/prisma/client'
import { getConfig } from '@/lib/server/platform/config'
import { outsideRequest } from '@/lib/server/platform/request-context'
import { logger } from '@/lib/server/platform/log'
import { lockDataDir } from './data-dir-lock'
import { applyMigrations } from './migrate'
import { pgliteSql, pgSql, type Sql } from './sql'

/**
 * The database handle. `sql` and `prisma` serve request-time work on a pool whose statements time out
 * (LAZARUS_STATEMENT_TIMEOUT_MS), so a heavy search or export cannot hold connections for long; `background` is a
 * separate pool for the drainer, the replay executor and the other engines, so no amount of web traffic can starve
 * them (and their long statements are not cut off). The embedded database is one connection: all three are the same.
 */
const log = logger('db')

export type Db = { sql: Sql; prisma: PrismaClient; background: Sql; close(): Promise<void> }

// node-pg returns int8 as strings; ids leave lib/ as strings anyway, and counts are cast in SQL.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => v)

export async function openDb(options: { databaseUrl?: string; dataDir?: string; migrate?: boolean } = {}): Promise<Db> {
  const config = getConfig()
  const databaseUrl = options.databaseUrl ?? config.DATABASE_URL
  let db: Db
  if (databaseUrl) {
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: config.LAZARUS_DB_POOL_SIZE,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      statement_timeout: config.LAZARUS_STATEMENT_TIMEOUT_MS,
      // No JIT for request-time statements: they read a page through indexes, and a filter the planner overestimates
      // (an equality over the search backlog's ranges) crossed jit_above_cost and spent 600 ms compiling for a 1 ms
      // lookup (docs/decisions/0013-header-terms-in-the-search-index.md).
      options: '-c jit=off',
      application_name: 'lazarus-web',
    })
    const backgroundPool = new pg.Pool({ connectionString: databaseUrl, max: 10, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000, application_name: 'lazarus-background' })
    // An idle client losing its connection (database restart) must not crash the process. The connection may have been
    // opened by a request long over: the line is not that request's.
    for (const p of [pool, backgroundPool]) p.on('error', (error) => outsideRequest(() => log.warn('idle connection error', { error: error.message })))
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) })
    db = {
      sql: pgSql(pool),
      prisma,
      background: pgSql(backgroundPool),
      close: async () => {
        await prisma.$disconnect()
        await Promise.all([pool.end(), backgroundPool.end()])
      },
    }
  } else {
    const shownAs = options.dataDir ?? config.LAZARUS_DATA_DIR
    const dataDir = path.resolve(shownAs, 'pglite')
    await mkdir(dataDir, { recursive: true })
    const unlock = lockDataDir({ dataDir: path.dirname(dataDir), shownAs })
    const { PGlite } = await import('@electric-sql/pglite')
    const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm')
    const { PrismaPGlite } = await import('pglite-prisma-adapter')
    let lite
    try {
      lite = await PGlite.create({ dataDir, extensions: { pg_trgm } })
    } catch (error) {
      unlock()
      throw error
    }
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite) })
    const sql = pgliteSql(lite)
    const opened = lite
    db = {
      sql,
      prisma,
      background: sql,
      close: async () => {
        await prisma.$disconnect()
        await opened.close()
        unlock()
      },
    }
  }
  if (options.migrate !== false) await applyMigrations({ sql: db.sql })
  return db
}
