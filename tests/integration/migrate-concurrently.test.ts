import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { createInterface } from 'node:readline'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadMigrations } from '@/lib/server/platform/db/migrate'
import { createEmptyPostgres } from '../helpers/engine-db'

/**
 * Two processes starting at once on one fresh PostgreSQL database (two `npm run worker`s, or a web process and a
 * worker) both migrate it: each must succeed, and each migration must be applied exactly once
 * (lib/server/platform/db/migrate.ts takes its advisory lock before it creates the bookkeeping table, since CREATE
 * TABLE IF NOT EXISTS run twice at once can fail on pg_type's unique index). Real OS processes
 * (tests/integration/migrate-child.ts), released together once each holds an open connection, over several rounds,
 * each on a new database. PGlite is one process's database and cannot race (docs/decisions/0002).
 */
const ROUNDS = 5
const root = path.resolve(import.meta.dirname, '../..')

type Child = { process: ChildProcess; next(): Promise<string> }

function startChild(): Child {
  const child = spawn(process.execPath, ['--conditions=react-server', '--import', 'tsx', path.join(import.meta.dirname, 'migrate-child.ts')], {
    cwd: root,
    env: { ...process.env, LAZARUS_LOG_LEVEL: 'warn' },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
  return {
    process: child,
    async next() {
      const { value, done } = await lines.next()
      if (done) throw new Error(`migrate-child exited (${child.exitCode ?? child.signalCode})`)
      return value
    },
  }
}

const send = (child: Child, line: string) => child.process.stdin!.write(`${line}\n`)

describe('two processes migrating one fresh database at once', () => {
  let children: Child[] = []
  beforeAll(() => {
    children = [startChild(), startChild()]
  })
  afterAll(async () => {
    for (const child of children) {
      child.process.stdin!.end()
      if (child.process.exitCode === null) await once(child.process, 'exit')
    }
  })

  it(`both succeed and apply each migration once, in ${ROUNDS} rounds`, async () => {
    const names = (await loadMigrations()).map((m) => m.name)
    for (let round = 0; round < ROUNDS; round++) {
      const database = await createEmptyPostgres('lazarus_migrate_race')
      try {
        for (const child of children) send(child, `open ${database.url}`)
        expect(await Promise.all(children.map((c) => c.next()))).toEqual(['ready', 'ready'])
        for (const child of children) send(child, 'go')
        const results = (await Promise.all(children.map((c) => c.next()))).map((line) => JSON.parse(line) as { applied?: string[]; error?: string })
        expect(results.map((r) => r.error)).toEqual([undefined, undefined])
        // One transaction each: whichever took the lock first applied everything, the other found nothing left.
        expect(results.flatMap((r) => r.applied!).sort()).toEqual(names)
        expect(results.map((r) => r.applied!.length).sort((a, b) => a - b)).toEqual([0, names.length])

        const client = new pg.Client({ connectionString: database.url })
        await client.connect()
        try {
          const { rows } = await client.query<{ name: string }>('SELECT name FROM _lazarus_migrations ORDER BY name')
          expect(rows.map((r) => r.name)).toEqual(names)
        } finally {
          await client.end()
        }
      } finally {
        await database.drop()
      }
    }
  })
})
