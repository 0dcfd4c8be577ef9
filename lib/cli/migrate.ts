/** `npm run db:migrate`: apply pending SQL migrations to DATABASE_URL (or the embedded database). */
import { openDb } from '@/lib/server/db'
import { applyMigrations } from '@/lib/server/db/migrate'

const db = await openDb({ migrate: false })
try {
  const applied = await applyMigrations(db.sql)
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date')
} finally {
  await db.close()
}
