import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * Counts the statements sent through a Sql (and the transactions it opens): "does this take a few statements however
 * many rows" asserted as a count, not as a time.
 */
export function countingSql(sql: Sql, counter: { statements: number }): Sql {
  return {
    kind: sql.kind,
    query: (text, params, options) => {
      counter.statements++
      return sql.query(text, params, options)
    },
    execute: (text, params, options) => {
      counter.statements++
      return sql.execute(text, params, options)
    },
    transaction: (fn) => sql.transaction((tx) => fn(countingSql(tx, counter))),
    exec: (script) => {
      counter.statements++
      return sql.exec(script)
    },
    close: () => sql.close(),
  }
}

/** The same Db with both its pools counted into one counter. */
export function countingDb(db: Db, counter: { statements: number }): Db {
  return { ...db, sql: countingSql(db.sql, counter), background: countingSql(db.background, counter) }
}
