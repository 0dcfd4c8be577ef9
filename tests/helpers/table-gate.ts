import pg from 'pg'
import { waitFor } from './broker'

/**
 * A table held ACCESS EXCLUSIVE on a connection of its own: statements that touch it wait until `release()`. A test
 * holds work at a known point with it (a dump with its snapshot taken, backfills that must start together) and reads
 * from `pg_locks` when the work has got there, instead of hoping the machine's pace lines things up.
 */
export type TableGate = {
  /** Resolves once `count` statements of this database wait on the table. */
  waiters(count: number, what: string): Promise<void>
  /** Commits the lock away; safe to call twice. */
  release(): Promise<void>
}

export async function closeTableGate(databaseUrl: string, table: string): Promise<TableGate> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  await client.query('BEGIN')
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
  let released: Promise<void> | null = null
  return {
    async waiters(count, what) {
      await waitFor(
        async () => {
          const { rows } = await client.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks WHERE relation = $1::regclass AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            [table],
          )
          return rows[0].n >= count ? true : null
        },
        { what },
      )
    },
    release() {
      released ??= client
        .query('COMMIT')
        .catch(() => {})
        .then(() => client.end())
      return released
    },
  }
}
