/** `npm run db:migrate`: apply pending SQL migrations to DATABASE_URL (or the embedded database). */
import { openDb } from '@/lib/server/platform/db'
import { applyMigrations } from '@/lib/server/platform/db/migrate'
import { logger } from '@/lib/server/platform/log'
import { preferBuiltMigrations } from '@/lib/server/platform/runtime/built-dir'

preferBuiltMigrations()

const db = await openDb({ migrate: false })
try {
  const applied = await applyMigrations({ sql: db.sql })
  logger('migrate').info(applied.length ? 'migrations applied' : 'database is up to date', { applied })
} finally {
  await db.close()
}
