import 'server-only'
import pg from 'pg'

/**
 * The one SQL interface the domain code uses, over either a real PostgreSQL pool or embedded PGlite (and, in a CRUD
 * transaction, over Prisma's: crud-transaction.ts). Hot paths (ingestion, lists) use it directly; simple CRUD goes
 * through Prisma on the same connection(s).
 *
 * Rows and affected-row counts are asked for apart, because the three implementations cannot all report both for one
 * statement: Prisma's raw calls give either the rows ($queryRaw) or the count ($executeRaw), never both, and PGlite's
 * count covers only INSERT, UPDATE, DELETE, COPY and MERGE. So `query` returns rows and no count (count them:
 * `rows.length`), and `execute` returns the count and no rows.
 */
export type SqlResult<T> = { rows: T[] }

/** What `execute` counts: the statements whose command tag reports the rows they changed. */
const COUNTED_COMMANDS = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

export type Sql = {
  readonly kind: 'postgres' | 'pglite'
  /** The rows of a SELECT, or of a data-changing statement with RETURNING. `name` makes PostgreSQL keep a prepared plan per connection; PGlite ignores it. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: { name?: string }): Promise<SqlResult<T>>
  /**
   * Runs an INSERT, UPDATE, DELETE or MERGE, alone or as the main statement after WITH, and returns how many rows it
   * changed (its command tag's count; rows changed inside the WITH are not counted, as in PostgreSQL's tag). On a pool
   * or PGlite any other statement (a SELECT) is refused after it ran (Prisma's $executeRaw cannot tell): read its rows
   * with `query`.
   */
  execute(text: string, params?: unknown[], options?: { name?: string }): Promise<number>
  /** Runs `fn` in one transaction; the callback's Sql is bound to that transaction. */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>
  /** Runs a multi-statement script without parameters (migrations). */
  exec(script: string): Promise<void>
  close(): Promise<void>
}

/** The affected-row count of a statement `execute` ran; throws for one it does not count (a SELECT, DDL). */
function countedRows(command: string | undefined, count: number | null | undefined): number {
  if (!command || !COUNTED_COMMANDS.has(command)) {
    throw new Error(`execute() counts the rows of INSERT, UPDATE, DELETE or MERGE; this statement was ${command ?? 'of no known command'}: use query() and its rows`)
  }
  return count ?? 0
}

export function pgSql(pool: pg.Pool): Sql {
  const onClient = (client: pg.PoolClient): Sql => ({
    kind: 'postgres',
    async query(text, params = [], options) {
      const result = await client.query({ text, values: params, name: options?.name })
      return { rows: result.rows }
    },
    async execute(text, params = [], options) {
      const result = await client.query({ text, values: params, name: options?.name })
      return countedRows(result.command, result.rowCount)
    },
    transaction: (fn) => fn(onClient(client)),
    exec: async (script) => {
      await client.query(script)
    },
    close: async () => {},
  })

  return {
    kind: 'postgres',
    async query(text, params = [], options) {
      const result = await pool.query({ text, values: params, name: options?.name })
      return { rows: result.rows }
    },
    async execute(text, params = [], options) {
      const result = await pool.query({ text, values: params, name: options?.name })
      return countedRows(result.command, result.rowCount)
    },
    async transaction(fn) {
      const client = await pool.connect()
      // A checked-out client whose server goes away emits 'error'; unheard, that would crash the process.
      const onError = () => {}
      client.on('error', onError)
      let broken: Error | undefined
      try {
        await client.query('BEGIN')
        const value = await fn(onClient(client))
        await client.query('COMMIT')
        return value
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => {
          broken = rollbackError
        })
        throw error
      } finally {
        client.off('error', onError)
        // A client that failed to roll back is not reusable: destroy it rather than return it to the pool.
        client.release(broken)
      }
    },
    async exec(script) {
      await pool.query(script)
    },
    close: () => pool.end(),
  }
}

type PGliteLike = {
  query<T>(text: string, params?: unknown[]): Promise<{ rows: T[]; command?: string; rowCount?: number }>
  exec(script: string): Promise<unknown>
  transaction<T>(fn: (tx: PGliteTx) => Promise<T>): Promise<T>
  close(): Promise<void>
}
type PGliteTx = Pick<PGliteLike, 'query' | 'exec'>

export function pgliteSql(db: PGliteLike): Sql {
  // PGlite is a single connection: nested transactions would deadlock, so a transaction's queries go to its handle.
  const onTx = (tx: PGliteTx): Sql => ({
    kind: 'pglite',
    async query<T>(text: string, params: unknown[] = []) {
      const result = await tx.query<T>(text, params.map(toPgliteParam))
      return { rows: result.rows }
    },
    async execute(text: string, params: unknown[] = []) {
      // rowCount is the statement's own command tag count, as node-pg reports it (affectedRows sums a whole script's).
      const result = await tx.query(text, params.map(toPgliteParam))
      return countedRows(result.command, result.rowCount)
    },
    transaction: (fn) => fn(onTx(tx)),
    exec: async (script) => {
      await tx.exec(script)
    },
    close: async () => {},
  })
  return {
    ...onTx(db),
    transaction: (fn) => db.transaction((tx) => fn(onTx(tx))),
    close: () => db.close(),
  }
}

/** node-pg turns Buffers inside arrays into bytea literals; PGlite wants plain Uint8Arrays. */
function toPgliteParam(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toPgliteParam)
  if (Buffer.isBuffer(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  return value
}

/** PostgreSQL error codes worth retrying the same transaction for. */
export function isRetryableSqlError(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code
  return code === '40P01' || code === '40001'
}

/** Connection-level failures: the database is down or unreachable, not a problem with the data. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null
  if (!e) return false
  // PostgreSQL's SQLSTATE (08: connection exception, 57P01-03: shutdown, 53300: too many connections), then Node's errno.
  if (e.code !== undefined) return /^(08|57P0[123]|53300)/.test(e.code) || CONNECTION_ERRNO.has(e.code)
  // No code: node-pg throws plain Errors for a connection that ended or never came ("Connection terminated
  // unexpectedly", "Connection terminated due to connection timeout", "Client has encountered a connection error and is
  // not queryable", "Client was closed and is not queryable"). Their text is all there is to tell them by.
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(e.message ?? '')
}

const CONNECTION_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH'])
