import 'server-only'
import { Prisma } from '@/lib/generated/prisma/client'
import type { Db } from './index'
import type { Sql } from './sql'

/**
 * Plain CRUD (sources, settings, users, API tokens) goes through Prisma; the audit entry that must commit with it
 * (`recordAudit`), a row lock or a query Prisma cannot say are SQL helpers that take an `Sql`
 * (docs/decisions/0012-db-in-options-prisma-for-crud.md). A CRUD transaction gives both, bound to one Prisma
 * interactive transaction: on PostgreSQL one pooled connection, on PGlite its single connection's transaction.
 */
export type CrudTransaction = { prisma: Prisma.TransactionClient; sql: Sql }

/**
 * How long a CRUD transaction may wait for a connection, and run. Prisma's defaults (2 s, 5 s) are shorter than a
 * busy pool's wait (5 s, lib/server/platform/db/index.ts) or one slow statement (LAZARUS_STATEMENT_TIMEOUT_MS).
 */
const TRANSACTION_LIMITS = { maxWait: 5_000, timeout: 60_000 }

/** Runs `fn` in one transaction in which Prisma calls and SQL helpers commit or roll back together. */
export function crudTransaction<T>(db: Pick<Db, 'prisma' | 'sql'>, fn: (tx: CrudTransaction) => Promise<T>): Promise<T> {
  return db.prisma.$transaction((prisma) => fn({ prisma, sql: sqlInPrismaTransaction(prisma, db.sql.kind) }), TRANSACTION_LIMITS)
}

/**
 * The Sql interface over an open Prisma interactive transaction. Rows come back typed as node-pg gives them to the
 * rest of the code where Prisma differs: int8 and numeric as strings (pg's parsers: lib/server/platform/db/index.ts),
 * bytea as a Buffer. `query` is always Prisma's $queryRaw (rows) and `execute` always its $executeRaw (the affected-row
 * count): Prisma reports one or the other for a statement, never both (lib/server/platform/db/sql.ts). Named
 * statements are not prepared (Prisma has no such option); `transaction` runs in the transaction already open.
 */
export function sqlInPrismaTransaction(tx: Prisma.TransactionClient, kind: Sql['kind']): Sql {
  const sql: Sql = {
    kind,
    async query<T>(text: string, params: unknown[] = []) {
      const rows = await tx.$queryRawUnsafe<Record<string, unknown>[]>(text, ...params)
      return { rows: rows.map(asPgRow) as T[] }
    },
    execute: (text, params = []) => tx.$executeRawUnsafe(text, ...params),
    transaction: (fn) => fn(sql),
    exec: async (script) => {
      await tx.$executeRawUnsafe(script)
    },
    close: async () => {},
  }
  return sql
}

function asPgRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key in row) out[key] = asPgValue(row[key])
  return out
}

function asPgValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return value.map(asPgValue)
  if (Prisma.Decimal.isDecimal(value)) return value.toString()
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  return value
}
