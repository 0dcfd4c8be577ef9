import { createHash, randomBytes } from 'node:crypto'
import pg from 'pg'
import type { TestProject } from 'vitest/node'
import { applyMigrations, loadMigrations } from '@/lib/server/platform/db/migrate'
import { pgSql } from '@/lib/server/platform/db/sql'
import { ADMIN_URL, databaseUrl } from './helpers/test-db'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated database that createTestDb copies (CREATE DATABASE … TEMPLATE) instead of migrating each copy. */
    templateDb: string
  }
}

/**
 * Migrates one template database per set of migrations, once per run (docs/ARCHITECTURE.md#tests). Each test file's
 * database is then a copy of it, which PostgreSQL makes in a few milliseconds, instead of 28 migrations applied ~70
 * times. The name carries a hash of the migrations, so an edited or added migration builds a new template and a stale
 * one is never used; the template is built under a temporary name and renamed when complete, so a run that dies while
 * building, or a second run on the same machine, never copies a half-migrated database.
 */
export default async function setup(project: TestProject): Promise<void> {
  const migrations = await loadMigrations()
  const hash = createHash('sha256').update(migrations.map((m) => `${m.name}:${m.sha256}`).join('\n')).digest('hex').slice(0, 16)
  const template = `lazarus_template_${hash}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])
    if (!rowCount) await buildTemplate({ admin, template })
  } finally {
    await admin.end()
  }
  project.provide('templateDb', template)
}

async function buildTemplate({ admin, template }: { admin: pg.Client; template: string }): Promise<void> {
  const building = `${template}_${randomBytes(4).toString('hex')}`
  await admin.query(`CREATE DATABASE ${building}`)
  const pool = new pg.Pool({ connectionString: databaseUrl(building), max: 1 })
  try {
    await applyMigrations({ sql: pgSql(pool) })
  } finally {
    await pool.end()
  }
  try {
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`)
  } catch (error) {
    // Another run on this machine finished the same template first (42P04: duplicate database): use theirs.
    await admin.query(`DROP DATABASE IF EXISTS ${building}`)
    if ((error as { code?: string }).code !== '42P04') throw error
  }
}
