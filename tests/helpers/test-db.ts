import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import { openDb, type Db } from '@/lib/server/platform/db'
import { composition } from '@/lib/server/platform/process/composition'

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** The connection string of database `name` on the test server. */
export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}

export type TestDb = Db & { url: string; name: string; drop(): Promise<void> }

/**
 * A fresh, migrated PostgreSQL database for one test file, installed as the database of the process's composition
 * root. It is a copy of the run's template database (tests/global-setup.ts), already migrated; outside a Vitest run
 * that provides one, the new database is migrated here.
 */
export async function createTestDb(prefix = 'lazarus_test'): Promise<TestDb> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const template = inject('templateDb')
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  try {
    await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = databaseUrl(name)
  const db = await openDb({ databaseUrl: url })
  composition().setDb(db)
  return {
    ...db,
    url,
    name,
    async drop() {
      composition().setDb(undefined)
      await db.close().catch(() => {})
      const c = new pg.Client({ connectionString: ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
    },
  }
}
