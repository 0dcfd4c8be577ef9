import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as messages from '@/app/api/messages/route'
import * as count from '@/app/api/messages/count/route'
import * as bodyFields from '@/app/api/messages/body-fields/route'
import * as exportRoute from '@/app/api/export/route'
import * as resolve from '@/app/api/messages/resolve/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import { indexSearchBacklog } from '@/lib/server/engines/search-indexer/search-index-store'
import { countMessages } from '@/lib/server/messages/count-messages'
import { listMessages } from '@/lib/server/messages/list-messages'
import { MESSAGES_FROM, messageFilterSql } from '@/lib/server/selection/message-filter-sql'
import { countMessagesQuerySchema, listMessagesQuerySchema } from '@/lib/shared/schemas/message'
import type { IngestRow } from '@/lib/server/ingest/types'
import { createTestUser, type TestUser } from '../helpers/auth'
import { callAs, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { bodyTerm } from '../helpers/body-term'

/*
 * Body field filters (`b./order/customer=42`, lib/shared/schemas/field-filter.ts) against real stored rows: the walk of
 * the newest rows, the search index's body terms (prisma/migrations/20261215000000_body_field_terms), the count, the
 * export and a resolve select the same messages, before and after the indexer ran; bodies that are not JSON (text,
 * malformed, binary, JSON PostgreSQL refuses, over 4 MiB) never match; and a viewer cannot recover a masked body value
 * one character at a time (docs/security.md, "The search oracle").
 */

const ORIGIN = 'http://lazarus.test'
const SECRET = 'hunter2-Zq9'
const LONG = `${'x'.repeat(70)}-one`
/** A body field's term as dead_letter_body_term writes it (migration 20261215000000_body_field_terms). */
const bodyTerms = (terms: string[]) => terms.filter((t) => t.startsWith('b#'))
const json = (value: unknown): Partial<IngestRow> & { body: Buffer } => ({ body: Buffer.from(JSON.stringify(value)), bodyEncoding: 'json' })
const raw = (text: string, bodyEncoding: IngestRow['bodyEncoding']): Partial<IngestRow> & { body: Buffer } => ({ body: Buffer.from(text), bodyEncoding })

/** The stored rows: name → body. */
const ROWS: Record<string, Partial<IngestRow> & { body: Buffer }> = {
  order: raw(
    JSON.stringify({
      order: { customer: 42, id: 'o-1' }, type: 'refund.partial', lines: [{ sku: 'A-1' }, { sku: 'B-2' }], flag: true, none: null,
      'a/b': { 'm~n': 'esc' }, customer: { password: SECRET, note: 'card 4111 1111 1111 1111 declined' }, obj: { x: 1 },
    }).replace('"flag":true', '"ratio":4.50,"flag":true'),
    'json',
  ),
  order2: raw('{"order":{"customer":"42"},"type":"refund.full","error":"timeout","lines":[{"sku":"B-2"}],"map":{"01":"zero-one","-1":"minus"},"big":1e2}', 'json'),
  other: json({ order: { customer: 7 }, type: 'payment', error: null }),
  arrayRoot: json([{ order: { customer: 42 } }]),
  // More leaves than the body terms hold (64): the body is marked, and every value of it is still found.
  wide: json({ ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])), order: { customer: 42 } }),
  // Nine levels: deeper than the body terms go (8), matched on the stored body.
  deep: json({ a: { b: { c: { d: { e: { f: { g: { h: { i: 'deep' } } } } } } } } }),
  long: json({ long: LONG, twin: `${'x'.repeat(70)}-two` }),
  text: raw('order customer 42', 'text'),
  malformed: raw('{"order": {"customer": 42', 'text'),
  binary: { body: Buffer.from([0x7b, 0x00, 0x01, 0x02]), bodyEncoding: 'binary' },
  // JSON JavaScript reads and PostgreSQL's jsonb refuses (an escaped U+0000, a lone surrogate): never matched, and the
  // indexer goes on past it.
  nul: raw('{"order":{"customer":42},"x":"\\u0000"}', 'json'),
  surrogate: raw('{"order":{"customer":42},"x":"\\ud800"}', 'json'),
  // Past the 4 MiB the drainer's rules parse.
  huge: raw(JSON.stringify({ order: { customer: 42 }, pad: 'p'.repeat(4 * 1024 * 1024) }), 'json'),
}
const JSON_ROWS = ['order', 'order2', 'other', 'arrayRoot', 'wide', 'deep', 'long']

/** Queries (URL-encoded as the list takes them) and the rows each must select. */
const CASES: [query: string, rows: string[]][] = [
  // A number and the string of its digits compare alike; nothing that is not JSON (or too large, or refused) matches.
  ['b./order/customer=42', ['order', 'order2', 'wide']],
  ['b./order/customer=7', ['other']],
  ['b./0/order/customer=42', ['arrayRoot']],
  ['b./type%5E=refund.', ['order', 'order2']],
  ['b./type=refund.partial', ['order']],
  ['b./error%3F=true', ['order2', 'other']],
  ['b./error%3F=false', JSON_ROWS.filter((r) => !['order2', 'other'].includes(r)).sort()],
  ['b./error=null', ['other']],
  ['b./none=null', ['order']],
  ['b./flag=true', ['order']],
  ['b./flag=false', []],
  // Numbers compare as PostgreSQL writes them: the digits as sent, an exponent written out.
  ['b./ratio=4.50', ['order']],
  ['b./ratio=4.5', []],
  ['b./big=100', ['order2']],
  ['b./big=1e2', []],
  // Array elements by canonical index only; on an object, the same tokens are member names.
  ['b./lines/1/sku=B-2', ['order']],
  ['b./lines/0/sku=B-2', ['order2']],
  ['b./lines/01/sku=B-2', []],
  ['b./lines/-1/sku=B-2', []],
  ['b./lines/length=2', []],
  ['b./map/01=zero-one', ['order2']],
  ['b./map/-1=minus', ['order2']],
  // RFC 6901 escapes: ~1 is "/", ~0 is "~".
  ['b./a~1b/m~0n=esc', ['order']],
  ['b./a~1b/m~0n%5E=es', ['order']],
  // An object exists and equals nothing.
  [`b./obj=${encodeURIComponent('{"x":1}')}`, []],
  ['b./obj%3F=true', ['order']],
  ['b./obj/x=1', ['order']],
  ['b./k99=99', ['wide']],
  ['b./k0=0', ['wide']],
  ['b./a/b/c/d/e/f/g/h/i=deep', ['deep']],
  ['b./a/b/c/d/e/f/g/h/i%5E=de', ['deep']],
  [`b./long=${LONG}`, ['long']],
  [`b./long=${'x'.repeat(70)}`, []],
  [`b./long%5E=${'x'.repeat(70)}`, ['long']],
  ['b./nope=1', []],
  // With each other and with the other filters.
  ['b./order/customer=42&b./type%5E=refund.', ['order', 'order2']],
  ['b./order/customer=42&b./error%3F=true', ['order2']],
  ['b./order/customer=42&entity=wide', ['wide']],
  ['b./order/customer=42&q=boom', ['order', 'order2', 'wide']],
]

describe('body field filters', () => {
  let db: TestDb
  let admin: TestUser, viewer: TestUser
  const ids: Record<string, string> = {}
  const name = (id: string) => Object.entries(ids).find(([, v]) => v === id)?.[0] ?? id
  const params = (query: string) => Object.fromEntries(new URLSearchParams(query))

  const call = (who: TestUser, module: RouteModule, method: 'GET' | 'POST', path: string, body?: unknown) => callAs(who, module, method, ORIGIN + path, body)
  async function list(query: string, who: TestUser = admin): Promise<string[]> {
    const response = await call(who, messages, 'GET', `/api/messages?${query}`)
    expect(response.status, response.text).toBe(200)
    return (JSON.parse(response.text).messages as { id: string }[]).map((m) => name(m.id)).sort()
  }
  async function counted(query: string, who: TestUser = admin): Promise<number> {
    const response = await call(who, count, 'GET', `/api/messages/count?${query}`)
    expect(response.status, response.text).toBe(200)
    return JSON.parse(response.text).count
  }
  async function exported(query: string, who: TestUser = admin): Promise<string[]> {
    const response = await call(who, exportRoute, 'GET', `/api/export?format=jsonl&${query}`)
    expect(response.status, response.text).toBe(200)
    return response.text.trim() ? response.text.trim().split('\n').map((line) => name(JSON.parse(line).id)).sort() : []
  }
  /** The list forced past the walk: a one-row window sends every equality to the terms. */
  async function indexed(query: string): Promise<string[]> {
    const page = await listMessages({ db, query: listMessagesQuerySchema.parse(params(query)), searchWindow: 1, maxSearchWindow: 1 })
    return page.messages.map((m) => name(m.id)).sort()
  }
  /** A count whose cap makes every equality "common": the rows are checked one by one as the scan walks them. */
  async function countedPerRow(query: string): Promise<number> {
    return (await countMessages({ db, filter: countMessagesQuerySchema.parse(params(query)), exactCap: 100 })).count
  }

  async function expectAllPaths() {
    for (const [query, expected] of CASES) {
      expect(await list(query), `list: ${query}`).toEqual(expected)
      expect(await indexed(query), `index: ${query}`).toEqual(expected)
      expect(await counted(query), `count: ${query}`).toBe(expected.length)
      expect(await countedPerRow(query), `count per row: ${query}`).toBe(expected.length)
    }
  }

  beforeAll(async () => {
    db = await createTestDb()
    admin = await createTestUser(db, 'ada', [{ role: 'admin' }])
    viewer = await createTestUser(db, 'vic', [{ role: 'viewer' }])
    const source = (await db.sql.query<{ id: string }>(`INSERT INTO sources (queue) VALUES ('bodies.dlq') RETURNING id::text`)).rows[0].id
    for (const [key, row] of Object.entries(ROWS)) {
      await storeBatch({ sql: db.sql, sourceId: source, sourceLabel: 'bodies.dlq', rows: [ingestRow({ ...row, entityKey: key })] })
      ids[key] = (await db.sql.query<{ id: string }>('SELECT id::text FROM dead_letters WHERE entity_key = $1', [key])).rows[0].id
    }
  })
  afterAll(async () => db?.drop())

  it('finds the same messages while they are only in the search backlog', async () => {
    expect((await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM dead_letter_search')).rows[0].n).toBe(0)
    await expectAllPaths()
  })

  it('indexes every body, hostile ones included, and finds the same messages through the body terms', async () => {
    while ((await indexSearchBacklog({ sql: db.sql })).ranges > 0) { /* index everything */ }
    expect((await db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM search_backlog')).rows[0].n).toBe(0)
    const terms = async (key: string) => (await db.sql.query<{ terms: string[] }>('SELECT terms FROM dead_letter_search WHERE dead_letter_id = $1', [ids[key]])).rows[0].terms
    // One term per scalar leaf (12: the object /obj is not one, its /obj/x is), the header terms beside them.
    const order = await terms('order')
    expect(bodyTerms(order)).toHaveLength(12)
    expect(order).toEqual(expect.arrayContaining([
      bodyTerm('/order/customer', '42'), bodyTerm('/type', 'refund.partial'), bodyTerm('/lines/1/sku', 'B-2'), bodyTerm('/flag', 'true'),
      bodyTerm('/none', 'null'), bodyTerm('/ratio', '4.50'), bodyTerm('/a~1b/m~0n', 'esc'), bodyTerm('/obj/x', '1'),
    ]))
    expect(await terms('order2')).toEqual(expect.arrayContaining([bodyTerm('/order/customer', '42'), bodyTerm('/big', '100'), bodyTerm('/map/01', 'zero-one')]))
    expect(await terms('long')).toContain(bodyTerm('/long', LONG))
    // 64 of the 101 leaves, and the mark that says there are more.
    const wide = await terms('wide')
    expect(wide).toContain('b:*')
    expect(bodyTerms(wide)).toHaveLength(64)
    expect(bodyTerms(await terms('deep'))).toEqual([])
    for (const key of ['text', 'malformed', 'binary', 'nul', 'surrogate', 'huge']) expect((await terms(key)).filter((t) => t.startsWith('b')), key).toEqual([])
    await expectAllPaths()
  })

  it('a parallel plan reads body fields and terms without failing', async () => {
    // dead_letter_body_json's exception block needs a subtransaction, which a parallel query cannot start: it and the
    // terms function are PARALLEL UNSAFE, so PostgreSQL keeps such statements in one process however it is tuned.
    await db.sql.transaction(async (tx) => {
      await tx.query(`SELECT set_config(name, 'on', true) FROM pg_settings WHERE name IN ('force_parallel_mode', 'debug_parallel_query')`)
      for (const setting of ['parallel_setup_cost', 'parallel_tuple_cost', 'min_parallel_table_scan_size']) await tx.query(`SELECT set_config($1, '0', true)`, [setting])
      const params: unknown[] = []
      const where = messageFilterSql(countMessagesQuerySchema.parse({ 'b./order/customer': '42' }), params, null, 'per-row')
      const { rows: [matched] } = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${MESSAGES_FROM} WHERE ${where}`, params)
      expect(matched.n).toBe(3)
      const { rows: [indexed] } = await tx.query<{ n: number }>('SELECT count(dead_letter_terms_v2(headers, properties, body, body_encoding, body_size))::int AS n FROM dead_letters')
      expect(indexed.n).toBe(Object.keys(ROWS).length)
    })
  })

  it('the export and a resolve of everything matching select what the list shows', async () => {
    for (const query of ['b./order/customer=42', 'b./type%5E=refund.', 'b./error%3F=false', 'b./k99=99']) {
      expect(await exported(query), query).toEqual(await list(query))
    }
    const response = await call(admin, resolve, 'POST', '/api/messages/resolve', { selection: { filter: { 'b./type^': 'refund.', 'b./order/customer': '42' } }, reason: 'refunds handled' })
    expect(response.status, response.text).toBe(200)
    expect(await list('status=resolved')).toEqual(['order', 'order2'])
    const { rows } = await db.sql.query<{ summary: string }>(`SELECT summary FROM audit_log WHERE action LIKE '%resolve%'`)
    expect(rows.map((r) => r.summary).join('\n')).toContain('b./type^=refund.')
  })

  it('the one-character-at-a-time oracle: a viewer never matches inside a masked body value, by list, count or export', async () => {
    const probes = [
      ...Array.from(SECRET, (_, i) => `b./customer/password%5E=${encodeURIComponent(SECRET.slice(0, i + 1))}`),
      `b./customer/password=${encodeURIComponent(SECRET)}`,
      // A value masked in part (a card number inside a note) compares as nothing either.
      ...Array.from('card 4111', (_, i) => `b./customer/note%5E=${encodeURIComponent('card 4111'.slice(0, i + 1))}`),
    ]
    for (const query of probes) {
      expect(await list(query), `admin: ${query}`).toEqual(['order'])
      expect(await list(query, viewer), query).toEqual([])
      expect(await counted(query, viewer), query).toBe(0)
      expect(await exported(query, viewer), query).toEqual([])
    }
    expect((await call(viewer, exportRoute, 'GET', '/api/export?format=md&b./customer/password%5E=h')).status).toBe(403)
    // Presence may be tested, as for headers; values redaction leaves alone still match.
    expect(await list('b./customer/password%3F=true', viewer)).toEqual(['order'])
    expect(await list('b./type=refund.partial', viewer)).toEqual(['order'])
    expect(await counted('b./order/customer=42', viewer)).toBe(3)
    expect(await exported('b./lines/1/sku=B-2', viewer)).toEqual(['order'])
  })

  it('offers the pointers of recent JSON bodies, never their values', async () => {
    const response = await call(admin, bodyFields, 'GET', '/api/messages/body-fields')
    expect(response.status, response.text).toBe(200)
    const sample = JSON.parse(response.text) as { sampled: number; fields: { pointer: string; kind: string; seen: number }[] }
    expect(sample.sampled).toBe(JSON_ROWS.length)
    expect(sample.fields[0]).toEqual({ pointer: '/order/customer', kind: 'number', seen: 4 })
    expect(sample.fields).toEqual(expect.arrayContaining([
      { pointer: '/a~1b/m~0n', kind: 'string', seen: 1 }, { pointer: '/0/order/customer', kind: 'number', seen: 1 }, { pointer: '/none', kind: 'null', seen: 1 },
    ]))
    // Eight levels, as deep as the body terms go.
    expect(sample.fields.some((f) => f.pointer.startsWith('/a/b/c'))).toBe(false)
    expect(response.text).not.toContain(SECRET)
    const viewed = await call(viewer, bodyFields, 'GET', `/api/messages/body-fields?source=${encodeURIComponent((await db.sql.query<{ id: string }>('SELECT id::text FROM sources')).rows[0].id)}`)
    expect(viewed.status, viewed.text).toBe(200)
    expect(JSON.parse(viewed.text).fields).toEqual(expect.arrayContaining([{ pointer: '/customer/password', kind: 'string', seen: 1 }]))
    expect((await call(admin, bodyFields, 'GET', '/api/messages/body-fields?q=x')).status).toBe(400)
  })

  it('rejects what it cannot read, naming it', async () => {
    for (const [query, message] of [
      ['b.order=1', 'starts with "/"'], ['b./a~2=1', '~0'], ['b./x%3F=maybe', 'match.0'], ['b./n%3E=5', 'match.0'], ['b./x=', 'value'],
    ] as const) {
      const response = await call(admin, messages, 'GET', `/api/messages?${query}`)
      expect(response.status, query).toBe(400)
      const { error } = JSON.parse(response.text) as { error: { code: string; message: string } }
      expect(error.code, query).toBe('invalid')
      expect(error.message, query).toContain(message)
    }
  })
})
