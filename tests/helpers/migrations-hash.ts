import { createHash } from 'node:crypto'
import { loadMigrations } from '@/lib/server/platform/db/migrate'

/**
 * What names a template kept between runs (tests/global-setup.ts, tests/helpers/pglite-templates.ts): a hash of every
 * migration's name and content, and of `also` (what else the template depends on), so a template made before an edit
 * is never used after it.
 */
export async function migrationsHash(also = ''): Promise<string> {
  const migrations = await loadMigrations()
  return createHash('sha256')
    .update(`${also}${migrations.map((m) => `${m.name}:${m.sha256}`).join('\n')}`)
    .digest('hex')
    .slice(0, 16)
}
