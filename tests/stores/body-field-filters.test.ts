import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import { countMessages } from '@/lib/server/messages/count-messages'
import { listMessages } from '@/lib/server/messages/list-messages'
import { countMessagesQuerySchema, listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { createEngineDb, type EngineDb } from '../helpers/engine-db'
import { insertSource, storeRows } from '../helpers/store-seed'
import { bodyTerm } from '../helpers/body-term'

/**
 * Body field filters' SQL on either engine (prisma/migrations/20261215000000_body_field_terms; the embedded PGlite runs
 * the same PL/pgSQL, recursive walk and GIN lookups as PostgreSQL): the walk, the body terms and the count agree, and
 * a body JavaScript parsed but PostgreSQL refuses neither matches nor stops the indexer. The routes, the export and the
 * viewer's oracle: tests/integration/body-field-filters.test.ts.
 */
let db: EngineDb
/** A body field's term as dead_letter_body_term writes it. */
const names = new Map<string, string>()
const BODIES: Record<string, [body: string, encoding: 'json' | 'text']> = {
  refund: ['{"order":{"customer":42},"type":"refund.partial","lines":[{"sku":"A"},{"sku":"B"}],"a/b":{"m~n":true}}', 'json'],
  digits: ['{"order":{"customer":"42"},"type":"payment","error":null}', 'json'],
  wide: [JSON.stringify({ ...Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, i])), order: { customer: 42 } }), 'json'],
  nul: ['{"order":{"customer":42},"x":"\\u0000"}', 'json'],
  text: ['order customer 42', 'text'],
}

beforeAll(async () => {
  db = await createEngineDb()
  const sourceId = await insertSource(db.sql)
  const ids = await storeRows(db.sql, sourceId, Object.values(BODIES).map(([body, bodyEncoding]) => ({ body: Buffer.from(body), bodyEncoding })))
  Object.keys(BODIES).forEach((name, i) => names.set(ids[i], name))
})
afterAll(async () => db?.drop())

const CASES: [query: Record<string, string>, rows: string[]][] = [
  [{ 'b./order/customer': '42' }, ['digits', 'refund', 'wide']],
  [{ 'b./type^': 'refund.' }, ['refund']],
  [{ 'b./error?': 'true' }, ['digits']],
  [{ 'b./error?': 'false' }, ['refund', 'wide']],
  [{ 'b./lines/1/sku': 'B' }, ['refund']],
  [{ 'b./lines/-1/sku': 'B' }, []],
  [{ 'b./a~1b/m~0n': 'true' }, ['refund']],
  [{ 'b./k79': '79' }, ['wide']],
]

async function expectAllPaths() {
  for (const [query, expected] of CASES) {
    const shown = (window: number) => listMessages({ db, query: listMessagesQuerySchema.parse(query), searchWindow: window, maxSearchWindow: window })
    for (const window of [1_000, 1]) {
      expect((await shown(window)).messages.map((m) => names.get(m.id)).sort(), `${JSON.stringify(query)} window ${window}`).toEqual(expected)
    }
    expect((await countMessages({ db, filter: countMessagesQuerySchema.parse(query) })).count, JSON.stringify(query)).toBe(expected.length)
  }
}

describe('body field filters', () => {
  it('match on the stored bodies before the indexer ran, and through the body terms after', async () => {
    await expectAllPaths()
    while ((await indexSearchBacklog({ sql: db.sql, ranges: 100 })).more);
    const { rows } = await db.sql.query<{ id: string; terms: string[] }>('SELECT dead_letter_id::text AS id, terms FROM dead_letter_search')
    const terms = (name: string) => rows.find((r) => names.get(r.id) === name)?.terms ?? []
    expect(terms('refund')).toEqual(expect.arrayContaining([bodyTerm('/order/customer', '42'), bodyTerm('/lines/1/sku', 'B'), bodyTerm('/a~1b/m~0n', 'true')]))
    expect(terms('wide')).toContain('b:*')
    expect(terms('nul').filter((t) => t.startsWith('b'))).toEqual([])
    expect(terms('text').filter((t) => t.startsWith('b'))).toEqual([])
    await expectAllPaths()
  })
})
