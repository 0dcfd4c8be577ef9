import { randomBytes } from 'node:crypto'
import { cp, mkdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { openDb } from '@/lib/server/platform/db'
import { migrationsHash } from './migrations-hash'

/**
 * Global setup of the stores-pglite project (vitest.config.ts): two PGlite data directories, an empty one and a
 * migrated one, which tests/helpers/engine-db.ts copies for each test database instead of running initdb (seconds of
 * WebAssembly) and every migration again. Both are opened by the same openDb as production.
 *
 * Like the PostgreSQL template (tests/global-setup.ts), they are kept between runs on a machine under a name that
 * carries a hash of the migrations and of the PGlite version, so an edited migration or a new PGlite builds new ones
 * and a stale pair is never used. They are built under a temporary name and renamed when complete, so a run that dies
 * while building, or a second run beside it, never copies a half-made one.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** LAZARUS_DATA_DIR-style directories (each holds pglite/): a fresh cluster, and one with every migration applied. */
    pgliteTemplates?: { empty: string; migrated: string }
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const root = path.join(tmpdir(), `lazarus-pglite-templates-${await templatesHash()}`)
  if (!(await exists(root))) await buildTemplates(root)
  project.provide('pgliteTemplates', { empty: path.join(root, 'empty'), migrated: path.join(root, 'migrated') })
}

async function templatesHash(): Promise<string> {
  const pglite = JSON.parse(await readFile(path.resolve(import.meta.dirname, '../../node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }
  return migrationsHash(`pglite ${pglite.version}\n`)
}

async function buildTemplates(root: string): Promise<void> {
  const building = `${root}.building-${randomBytes(4).toString('hex')}`
  const empty = path.join(building, 'empty')
  const migrated = path.join(building, 'migrated')
  try {
    await mkdir(building, { recursive: true })
    await (await openDb({ dataDir: empty, migrate: false })).close()
    await cp(empty, migrated, { recursive: true })
    await (await openDb({ dataDir: migrated })).close()
    await rename(building, root)
  } catch (error) {
    // Another run on this machine finished the same templates first (the rename finds the folder there): use theirs.
    if (!(await exists(root))) throw error
  } finally {
    await rm(building, { recursive: true, force: true })
  }
}

const exists = (file: string) => stat(file).then(() => true, () => false)
