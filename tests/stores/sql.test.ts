import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import type { Sql } from '@/lib/server/platform/db/sql'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'

/**
 * The Sql interface on every implementation the stores run on (lib/server/platform/db/sql.ts): the pool and a
 * transaction on it (node-pg, or PGlite's one connection), and the Sql over a Prisma interactive transaction
 * (crud-transaction.ts). `query` gives rows and no count; `execute` gives the rows an INSERT, UPDATE or DELETE
 * changed, the same number on each, also for a statement that starts with WITH and has no RETURNING (which Prisma's
 * $queryRaw would report as zero rows).
 */
let db: EngineDb
beforeAll(async () => {
  db = await createEngineDb()
  await db.sql.exec('CREATE TABLE counted (id int PRIMARY KEY, n int NOT NULL); CREATE TABLE counted_log (id int, note text)')
})
afterAll(async () => db?.drop())

beforeEach(async () => {
  await db.sql.exec('DELETE FROM counted; DELETE FROM counted_log; INSERT INTO counted SELECT i, 0 FROM generate_series(1, 5) i')
})

const values = async () => (await db.sql.query<{ id: number; n: number }>('SELECT id, n FROM counted ORDER BY id')).rows.map((r) => r.n)

type Way = <T>(fn: (sql: Sql) => Promise<T>) => Promise<T>
const ways: [string, Way][] = [
  ['the pool', (fn) => fn(db.sql)],
  ['the background pool', (fn) => fn(db.background)],
  ['a transaction', (fn) => db.sql.transaction(fn)],
  ['a CRUD transaction (Prisma)', (fn) => crudTransaction(db, ({ sql }) => fn(sql))],
]

describe.each(ways)('Sql on %s', (_name, on) => {
  it('counts the rows an UPDATE or DELETE changed, and none when it matched none', async () => {
    expect(await on((sql) => sql.execute('UPDATE counted SET n = n + 1 WHERE id > $1', [2]))).toBe(3)
    expect(await on((sql) => sql.execute('UPDATE counted SET n = n + 1 WHERE id > $1', [99]))).toBe(0)
    expect(await on((sql) => sql.execute('DELETE FROM counted WHERE id = ANY($1::int[])', [[1, 2, 42]]))).toBe(2)
    expect(await values()).toEqual([1, 1, 1])
  })

  it('counts a WITH … UPDATE without RETURNING by the rows its main statement changed', async () => {
    const changed = await on((sql) =>
      sql.execute('WITH picked AS (SELECT id FROM counted WHERE id <= $1) UPDATE counted c SET n = c.n + 10 FROM picked WHERE c.id = picked.id', [3]),
    )
    expect(changed).toBe(3)
    expect(await values()).toEqual([10, 10, 10, 0, 0])
  })

  it('counts a WITH (UPDATE … RETURNING) INSERT … SELECT by the rows it inserted, as takeMessagesIntoJob runs it', async () => {
    const inserted = await on((sql) =>
      sql.execute(
        `WITH marked AS (UPDATE counted SET n = 1 WHERE n = 0 AND id % 2 = 1 RETURNING id)
         INSERT INTO counted_log (id, note) SELECT id, 'marked' FROM marked`,
      ),
    )
    expect(inserted).toBe(3)
    expect(await values()).toEqual([1, 0, 1, 0, 1])
    // Run again: nothing is left to mark, and the count says so.
    expect(await on((sql) => sql.execute(`WITH marked AS (UPDATE counted SET n = 1 WHERE n = 0 AND id % 2 = 1 RETURNING id) INSERT INTO counted_log SELECT id FROM marked`))).toBe(0)
  })

  it('counts an upsert by the rows it inserted or updated', async () => {
    const upserted = await on((sql) =>
      sql.execute('INSERT INTO counted (id, n) SELECT i, 7 FROM generate_series(4, 8) i ON CONFLICT (id) DO UPDATE SET n = excluded.n', []),
    )
    expect(upserted).toBe(5)
    expect(await values()).toEqual([0, 0, 0, 7, 7, 7, 7, 7])
  })

  it('gives the rows of RETURNING through query, and rows only', async () => {
    const result = await on((sql) => sql.query<{ id: number }>('UPDATE counted SET n = 2 WHERE id < 3 RETURNING id'))
    expect(result).toEqual({ rows: expect.arrayContaining([{ id: 1 }, { id: 2 }]) })
    expect(result.rows).toHaveLength(2)
  })

  it('runs a data-changing statement without RETURNING through query, with no rows to show', async () => {
    expect(await on((sql) => sql.query('UPDATE counted SET n = 3 WHERE id = 5'))).toEqual({ rows: [] })
    expect(await values()).toEqual([0, 0, 0, 0, 3])
  })
})

describe.each(ways.filter(([name]) => !name.includes('Prisma')))('execute on %s', (_name, on) => {
  it('refuses to count a SELECT (its rows are query’s), instead of answering a number that means something else', async () => {
    await expect(on((sql) => sql.execute('SELECT id FROM counted'))).rejects.toThrow(/execute\(\) counts the rows of INSERT, UPDATE, DELETE or MERGE; this statement was SELECT/)
  })
})

describe('a transaction', () => {
  it('rolls back what it executed when its callback throws', async () => {
    const failed = db.sql.transaction(async (tx) => {
      expect(await tx.execute('UPDATE counted SET n = 9')).toBe(5)
      throw new Error('changed my mind')
    })
    await expect(failed).rejects.toThrow('changed my mind')
    expect(await values()).toEqual([0, 0, 0, 0, 0])
  })

  it('of Prisma rolls back the SQL executed in it with its Prisma writes', async () => {
    const failed = crudTransaction(db, async ({ prisma, sql }) => {
      await prisma.source.create({ data: { queue: 'rolled.back' } })
      expect(await sql.execute('DELETE FROM counted')).toBe(5)
      throw new Error('changed my mind')
    })
    await expect(failed).rejects.toThrow('changed my mind')
    expect(await values()).toEqual([0, 0, 0, 0, 0])
    expect(await db.prisma.source.count({ where: { queue: 'rolled.back' } })).toBe(0)
  })
})
