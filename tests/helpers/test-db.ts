import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDb, setDb, type Db } from '@/lib/server/platform/db'

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export type TestDb = Db & { url: string; name: string; drop(): Promise<void> }

/** A fresh, migrated PostgreSQL database for one test file, installed as the process-wide database. */
export async function createTestDb(prefix = 'lazarus_test'): Promise<TestDb> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  const db = await openDb({ databaseUrl: url.toString() })
  setDb(db)
  return {
    ...db,
    url: url.toString(),
    name,
    async drop() {
      setDb(undefined)
      await db.close().catch(() => {})
      const c = new pg.Client({ connectionString: ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}
