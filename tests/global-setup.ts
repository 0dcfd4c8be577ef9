import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import pg from 'pg'
import type { TestProject } from 'vitest/node'
import { bundleProcesses } from '@/lib/build/bundle-processes.mjs'
import { applyMigrations } from '@/lib/server/platform/db/migrate'
import { pgSql } from '@/lib/server/platform/db/sql'
import { endPool } from './helpers/end-pool'
import { migrationsHash } from './helpers/migrations-hash'
import { ADMIN_URL, databaseUrl } from './helpers/test-db'
import { removeLeftoverTestStreams } from './helpers/nats'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated database that createTestDb copies (CREATE DATABASE … TEMPLATE) instead of migrating each copy. */
    templateDb: string
    /** The folder of this run's process bundles (serve.mjs, worker.mjs, migrate.mjs), as production runs them. */
    processBundles: string
  }
}

/**
 * Migrates one template database per set of migrations, once per run (docs/ARCHITECTURE.md#tests). Each test file's
 * database is then a copy of it, which PostgreSQL makes in a few milliseconds, instead of 28 migrations applied ~70
 * times. The name carries a hash of the migrations, so an edited or added migration builds a new template and a stale
 * one is never used; the template is built under a temporary name and renamed when complete, so a run that dies while
 * building, or a second run on the same machine, never copies a half-migrated database.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [bundles] = await Promise.all([buildProcessBundles(), removeLeftoverTestStreams()])
  project.provide('processBundles', bundles)
  const template = `lazarus_template_${await migrationsHash()}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])
    if (!rowCount) await buildTemplate({ admin, template })
  } finally {
    await admin.end()
  }
  project.provide('templateDb', template)
  return () => rm(bundles, { recursive: true, force: true })
}

/**
 * Tests that start Lazarus' processes (a worker to SIGKILL, a second server on one data folder) start them as
 * production does: compiled by the same bundler as `npm run build` (lib/build/bundle-processes.mjs), in well under a
 * second, and run by plain `node`. Inside the repository, so their packages come from its node_modules; a folder per
 * run, so two runs never share one.
 */
async function buildProcessBundles(): Promise<string> {
  const results = path.resolve(import.meta.dirname, '../test-results')
  await mkdir(results, { recursive: true })
  const outdir = await mkdtemp(path.join(results, 'processes-'))
  await bundleProcesses({ outdir })
  return outdir
}

async function buildTemplate({ admin, template }: { admin: pg.Client; template: string }): Promise<void> {
  const building = `${template}_${randomBytes(4).toString('hex')}`
  await admin.query(`CREATE DATABASE ${building}`)
  const pool = new pg.Pool({ connectionString: databaseUrl(building), max: 1 })
  try {
    await applyMigrations({ sql: pgSql(pool) })
  } finally {
    await endPool(pool)
  }
  try {
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`)
  } catch (error) {
    // Another run on this machine finished the same template first (42P04: duplicate database): use theirs.
    await admin.query(`DROP DATABASE IF EXISTS ${building}`)
    if ((error as { code?: string }).code !== '42P04') throw error
  }
}
