import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { openDb } from '@/lib/server/platform/db'

/**
 * Global setup of the stores-pglite project (vitest.config.ts): two PGlite data directories made once per run, an
 * empty one and a migrated one, which tests/helpers/engine-db.ts copies for each test database instead of running
 * initdb (half a minute of WebAssembly) and every migration again. Both are opened by the same openDb as production.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** LAZARUS_DATA_DIR-style directories (each holds pglite/): a fresh cluster, and one with every migration applied. */
    pgliteTemplates?: { empty: string; migrated: string }
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = await mkdtemp(path.join(tmpdir(), 'lazarus-pglite-templates-'))
  const empty = path.join(root, 'empty')
  const migrated = path.join(root, 'migrated')
  await (await openDb({ dataDir: empty, migrate: false })).close()
  await cp(empty, migrated, { recursive: true })
  await (await openDb({ dataDir: migrated })).close()
  project.provide('pgliteTemplates', { empty, migrated })
  return () => rm(root, { recursive: true, force: true })
}
