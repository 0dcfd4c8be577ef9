/**
 * Child process of migrate-concurrently.test.ts: migrates the databases it is told to, one line of stdin at a time.
 * "open <url>" opens the database with a warm connection and the migration files read, and answers "ready"; "go"
 * applies the migrations and answers with the names it applied as JSON (or the error), then closes the database.
 * Everything slow happens before "ready", so two children told "go" together race on the database itself.
 *
 * stdout carries the answers only; the log goes to stderr. A pool's client that has ended while its backend is still
 * closing when the round's database is dropped (WITH (FORCE)) logs "idle connection error" after the child answered,
 * and on stdout that line was read as the next round's answer.
 */
import { createInterface } from 'node:readline'
import { openDb, type Db } from '@/lib/server/platform/db'
import { applyMigrations, loadMigrations, type Migration } from '@/lib/server/platform/db/migrate'
import { setLogOutput } from '@/lib/server/platform/log'

setLogOutput({ write: (line) => void process.stderr.write(line) })

let db: Db | undefined
let migrations: Migration[] = []
for await (const line of createInterface({ input: process.stdin })) {
  const [command, argument] = line.split(' ')
  if (command === 'open') {
    db = await openDb({ databaseUrl: argument, migrate: false })
    await db.sql.query('SELECT 1')
    migrations = await loadMigrations()
    process.stdout.write('ready\n')
  } else if (command === 'go' && db) {
    const opened = db
    const result = await applyMigrations({ sql: opened.sql, migrations }).then(
      (applied) => ({ applied }),
      (error: Error & { code?: string }) => ({ error: `${error.code ?? ''} ${error.message}` }),
    )
    await opened.close()
    db = undefined
    process.stdout.write(`${JSON.stringify(result)}\n`)
  }
}
