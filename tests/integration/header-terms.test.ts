import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as messages from '@/app/api/messages/route'
import * as count from '@/app/api/messages/count/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import { countMessages } from '@/lib/server/messages/count-messages'
import { listMessages } from '@/lib/server/messages/list-messages'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { countMessagesQuerySchema, listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callRoute, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Header and property equalities through the search index's header terms (docs/decisions/0013-header-terms-in-the-
 * search-index.md): the same messages whether a row is still in the search backlog (its stored values are tested) or
 * indexed (its terms are looked up, then its stored values tested), whether the list walks the newest rows or goes to
 * the index, and for the count. Every scalar type of the typed header table, long values (hashed terms), names that
 * hold '=', ':' and '#', and a viewer who must not match a masked value.
 */

const ORIGIN = 'http://lazarus.test'
const SECRET = 'hunter2-Zq9'
const S = (v: string) => ({ t: 'S', v })
const LONG = `${'x'.repeat(70)}-one`
const LONG_TWIN = `${'x'.repeat(70)}-two`

/** The stored rows: name → typed headers and properties. */
const ROWS: Record<string, { headers: Record<string, unknown>; properties: Record<string, unknown> }> = {
  typed: {
    headers: {
      tenant: S('acme'), long: { t: 'l', v: '9007199254740993' }, int: { t: 'I', v: 3 }, short: { t: 's', v: -2 }, byte: { t: 'b', v: 7 },
      bool: { t: 't', v: true }, double: { t: 'd', v: 1.5 }, float: { t: 'f', v: 0.25 }, time: { t: 'T', v: 1764547200 },
      decimal: { t: 'D', v: { places: 2, digits: 1234 } }, void: { t: 'V', v: null }, blob: { t: 'x', b64: 'AAE=' },
      table: { t: 'F', v: { a: S('b') } }, array: { t: 'A', v: [S('one')] }, password: S(SECRET),
    },
    properties: { messageId: 'm-typed', correlationId: 'corr-typed', type: 'order.created', appId: 'shop', userId: 'guest' },
  },
  other: {
    headers: { tenant: S('globex'), long: { t: 'l', v: '42' }, bool: { t: 't', v: false }, text: S(LONG) },
    properties: { messageId: 'm-other', correlationId: 'corr-other', appId: 'billing' },
  },
  twin: { headers: { tenant: S('acme'), text: S(LONG_TWIN) }, properties: { correlationId: 'corr-twin' } },
  // Names a naive `name=value` term could not tell apart: a=b / c and a / b=c, x:y / z and x / y:z.
  names: { headers: { 'a=b': S('c'), 'x:y': S('z'), '#': S('#'), '': S('empty') }, properties: {} },
  split: { headers: { a: S('b=c'), x: S('y:z') }, properties: {} },
  bare: { headers: {}, properties: {} },
}

/** Queries (URL-encoded as the list takes them) and the rows each must select. */
const CASES: [query: string, rows: string[]][] = [
  ['h.tenant=acme', ['twin', 'typed']],
  ['h.tenant=globex', ['other']],
  ['h.tenant=initech', []],
  ['h.long=9007199254740993', ['typed']],
  ['h.long=42', ['other']],
  ['h.int=3', ['typed']],
  ['h.short=-2', ['typed']],
  ['h.byte=7', ['typed']],
  ['h.bool=true', ['typed']],
  ['h.bool=false', ['other']],
  ['h.double=1.5', ['typed']],
  ['h.float=0.25', ['typed']],
  ['h.time=1764547200', ['typed']],
  [`h.decimal=${encodeURIComponent('{"places":2,"digits":1234}')}`, ['typed']],
  [`h.table=${encodeURIComponent('{"a":{"t":"S","v":"b"}}')}`, ['typed']],
  [`h.array=${encodeURIComponent('[{"t":"S","v":"one"}]')}`, ['typed']],
  ['h.blob=AAE%3D', []],
  [`h.text=${LONG}`, ['other']],
  [`h.text=${LONG_TWIN}`, ['twin']],
  [`h.text=${'x'.repeat(70)}`, []],
  ['h.a%3Db=c', ['names']],
  ['h.a=b%3Dc', ['split']],
  ['h.x%3Ay=z', ['names']],
  ['h.x=y%3Az', ['split']],
  ['h.%23=%23', ['names']],
  ['p.correlationId=corr-typed', ['typed']],
  ['p.messageId=m-other', ['other']],
  ['p.type=order.created', ['typed']],
  ['p.appId=billing', ['other']],
  ['p.userId=guest', ['typed']],
  ['p.userId=nobody', []],
  // Several equalities together, and with the conditions that are not indexed.
  ['h.tenant=acme&p.correlationId=corr-twin', ['twin']],
  ['h.tenant=acme&h.bool=true', ['typed']],
  ['h.tenant=acme&h.text%3F=true', ['twin']],
  ['h.tenant=acme&p.type%5E=order.', ['typed']],
  ['h.tenant=acme&q=boom', ['twin', 'typed']],
]

describe('header and property equalities through the header terms', () => {
  let db: TestDb
  let admin: TestUser, viewer: TestUser
  const ids: Record<string, string> = {}
  const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id

  const params = (query: string) => Object.fromEntries(new URLSearchParams(query))
  /** The list as the route runs it: the newest rows walked first (a handful of rows: the walk sees them all). */
  async function walked(query: string): Promise<string[]> {
    const page = await listMessages({ db, query: listMessagesQuerySchema.parse(params(query)) })
    return page.messages.map((m) => name(m.id)).sort()
  }
  /** The list forced past the walk: a one-row window sends every equality to the header terms. */
  async function indexed(query: string, view?: Awaited<ReturnType<typeof redactedViewFor>>): Promise<string[]> {
    const page = await listMessages({ db, query: listMessagesQuerySchema.parse(params(query)), searchWindow: 1, maxSearchWindow: 1, view })
    return page.messages.map((m) => name(m.id)).sort()
  }
  async function counted(query: string): Promise<number> {
    return (await countMessages({ db, filter: countMessagesQuerySchema.parse(params(query)) })).count
  }
  async function call(who: TestUser, module: RouteModule, path: string) {
    const response = await callRoute(module, 'GET', new Request(ORIGIN + path, { headers: { authorization: who.authorization } }), {})
    expect(response.status).toBe(200)
    return JSON.parse(await response.text())
  }

  async function expectAllPaths() {
    for (const [query, expected] of CASES) {
      expect(await walked(query), `walk: ${query}`).toEqual(expected)
      expect(await indexed(query), `index: ${query}`).toEqual(expected)
      expect(await counted(query), `count: ${query}`).toBe(expected.length)
    }
  }

  beforeAll(async () => {
    db = await createTestDb()
    admin = await createTestUser(db, 'ada', [{ role: 'admin' }])
    viewer = await createTestUser(db, 'vic', [{ role: 'viewer' }])
    const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('tenants.dlq') RETURNING id::text`)).rows[0].id
    for (const [key, row] of Object.entries(ROWS)) {
      await storeBatch({ sql: db.sql, sourceId: source, sourceLabel: 'tenants.dlq', rows: [ingestRow({ headersJson: JSON.stringify(row.headers), propertiesJson: JSON.stringify(row.properties), entityKey: key })] })
      ids[key] = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE entity_key = $1', [key])).rows[0].id
    }
  })
  afterAll(async () => db?.drop())

  it('finds the same messages while they are only in the search backlog', async () => {
    const { rows } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letter_search')
    expect(rows[0].n).toBe(0)
    await expectAllPaths()
  })

  it('finds the same messages once they are indexed, through their terms', async () => {
    while ((await indexSearchBacklog({ sql: db.sql })).ranges > 0) { /* index everything */ }
    const { rows: [left] } = await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM search_backlog')
    expect(left.n).toBe(0)
    const { rows: [typed] } = await db.sql.query<{ terms: string[] }>('SELECT terms FROM dead_letter_search WHERE dead_letter_id = $1', [ids.typed])
    expect(typed.terms).toEqual(expect.arrayContaining(['h:6:tenant=acme', 'h:4:long=9007199254740993', 'h:4:bool=true', 'p:13:correlationId=corr-typed']))
    // A value kept only as bytes has no text, so no term.
    expect(typed.terms.some((t) => t.startsWith('h:4:blob'))).toBe(false)
    const { rows: [other] } = await db.sql.query<{ terms: string[] }>('SELECT terms FROM dead_letter_search WHERE dead_letter_id = $1', [ids.other])
    // A value past 64 characters is kept as a hash, so the GIN entries stay small.
    expect(other.terms.filter((t) => t.startsWith('h:4:text'))).toEqual([expect.stringMatching(/^h:4:text#[0-9a-f]{16}$/)])
    await expectAllPaths()
  })

  it('a count past the cap checks rows as it walks (a common value), below it takes the terms (a rare one): the same figures', async () => {
    // With a cap of 1, acme (2 messages) is "common": the terms say more than the cap, the capped scan says so too.
    const count = (query: string) => countMessages({ db, filter: countMessagesQuerySchema.parse(params(query)), exactCap: 1 })
    expect(await count('h.tenant=acme')).toMatchObject({ estimated: true })
    expect((await count('h.tenant=acme')).count).toBeGreaterThanOrEqual(2)
    expect(await count('h.tenant=globex')).toEqual({ count: 1, estimated: false, method: 'exact' })
    expect(await count('h.tenant=initech')).toEqual({ count: 0, estimated: false, method: 'exact' })
    expect(await count('h.tenant=acme&p.correlationId=corr-twin')).toEqual({ count: 1, estimated: false, method: 'exact' })
  })

  it('a message stored after the others is found before the indexer reaches it', async () => {
    const source = (await db.sql.query<{ id: string }>(`SELECT id::text FROM sources WHERE queue = 'tenants.dlq'`)).rows[0].id
    await storeBatch({ sql: db.sql, sourceId: source, sourceLabel: 'tenants.dlq', rows: [ingestRow({ headersJson: JSON.stringify({ tenant: S('acme') }), entityKey: 'late' })] })
    ids.late = (await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE entity_key = 'late'`)).rows[0].id
    for (const look of [walked, indexed]) expect(await look('h.tenant=acme')).toEqual(['late', 'twin', 'typed'])
    expect(await counted('h.tenant=acme')).toBe(3)
    while ((await indexSearchBacklog({ sql: db.sql })).ranges > 0) { /* index it */ }
    for (const look of [walked, indexed]) expect(await look('h.tenant=acme')).toEqual(['late', 'twin', 'typed'])
    expect(await counted('h.tenant=acme')).toBe(3)
  })

  it('a viewer does not match a masked value through the index either, and can still test that it exists', async () => {
    const view = await redactedViewFor({ db, rawSourceIds: [] })
    expect(view).toBeDefined()
    expect(await indexed(`h.password=${SECRET}`)).toEqual(['typed'])
    expect(await indexed(`h.password=${SECRET}`, view)).toEqual([])
    expect(await indexed('h.password%3F=true', view)).toEqual(['typed'])
    const listed = await call(viewer, messages, `/api/messages?h.password=${SECRET}`)
    expect(listed.messages).toEqual([])
    expect((await call(viewer, count, `/api/messages/count?h.password=${SECRET}`)).count).toBe(0)
    expect((await call(admin, count, `/api/messages/count?h.password=${SECRET}`)).count).toBe(1)
  })
})
