import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_AUTH } from '../helpers/auth'
import { createHash } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'
import { parse as parseCsv } from 'csv-parse/sync'
import { createTestDb, type TestDb } from '../helpers/test-db'
import * as exportRoute from '@/app/api/export/route'
import * as groupTicketRoute from '@/app/api/groups/[id]/ticket/route'
import * as messageTicketRoute from '@/app/api/messages/[id]/ticket/route'
import * as redactionRoute from '@/app/api/settings/redaction/route'
import * as previewRoute from '@/app/api/settings/redaction/preview/route'
import * as sourcesRoute from '@/app/api/sources/route'
import { encodeTypedTable, type TypedTable, type TypedValue } from '@/lib/server/platform/broker/typed-fields'
import { readExportPages } from '@/lib/server/export/export-rows'
import type { Sql } from '@/lib/server/platform/db/sql'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'
import type { IngestRow } from '@/lib/server/ingest/types'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { createRedactor } from '@/lib/server/redaction/redactor'

const base = 'http://lazarus.test'
const ctx = <P>(params: P) => ({ params: Promise.resolve(params) })
const exportGet = (query: string) => exportRoute.GET(new Request(`${base}/api/export${query}`, { headers: ADMIN_AUTH }), ctx({}))
type Json = any

const X_DEATH: TypedValue = {
  t: 'A',
  v: [{ t: 'F', v: { count: { t: 'l', v: '3' }, reason: { t: 'S', v: 'rejected' }, queue: { t: 'S', v: 'orders.q' }, time: { t: 'T', v: '1764547200' }, exchange: { t: 'S', v: 'orders' }, 'routing-keys': { t: 'A', v: [{ t: 'S', v: 'order.placed' }] } } }],
}

/** Every AMQP field type, nested tables and arrays, non-UTF-8 strings and byte arrays: what JSON Lines must carry exactly. */
const TYPED_HEADERS: TypedTable = {
  'x-bool': { t: 't', v: true },
  'x-int8': { t: 'b', v: -5 },
  'x-uint8': { t: 'B', v: 250 },
  'x-int16': { t: 's', v: -300 },
  'x-uint16': { t: 'u', v: 65000 },
  'x-int32': { t: 'I', v: -70000 },
  'x-uint32': { t: 'i', v: 4000000000 },
  'x-int64': { t: 'l', v: '-9007199254740993' },
  'x-timestamp': { t: 'T', v: '1764547200' },
  'x-float': { t: 'f', v: 1.5 },
  'x-double': { t: 'd', v: 'NaN' },
  'x-decimal': { t: 'D', v: { places: 2, digits: 12345 } },
  'x-latin1': { t: 'S', b64: Buffer.from([0x63, 0x61, 0x66, 0xe9]).toString('base64') },
  'x-bytes': { t: 'x', b64: Buffer.from([0, 1, 2, 255]).toString('base64') },
  'x-void': { t: 'V' },
  'x-nested': { t: 'F', v: { inner: { t: 'A', v: [{ t: 'S', v: 'a, "b"\nc' }, { t: 'I', v: 1 }, { t: 'F', v: { deep: { t: 'l', v: '1' } } }] } } },
  'x-exception-message': { t: 'S', v: 'Stock, "quoted"\nsecond line' },
  'x-death': X_DEATH,
}

const ALL_BYTES = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
const BODIES: { name: string; body: Buffer; encoding: IngestRow['bodyEncoding'] }[] = [
  { name: 'json with commas, quotes and newlines', body: Buffer.from('{"note":"a, b \\"c\\"\\nd","n":12345678901234567890,"list":[1,2]}'), encoding: 'json' },
  { name: 'text with commas, quotes, CRLF and unicode', body: Buffer.from('line one, "quoted"\r\nline two; ünïcödé ✓ 🐇\nlast,'), encoding: 'text' },
  { name: 'binary, every byte value', body: ALL_BYTES, encoding: 'binary' },
  { name: 'formula injection', body: Buffer.from('=HYPERLINK("http://evil.example","click")'), encoding: 'text' },
  { name: 'empty', body: Buffer.alloc(0), encoding: 'text' },
]

let serial = 0
function row(overrides: Partial<IngestRow> & { failedAt: Date }): IngestRow {
  const body = overrides.body ?? Buffer.from(`{"n":${serial}}`)
  return {
    fingerprint: createHash('sha256').update(`export-${serial++}`).digest(),
    redelivered: false, body, bodyEncoding: 'json', bodyPreview: overrides.bodyEncoding === 'binary' ? null : body.toString('utf8').slice(0, 8192),
    propertiesJson: JSON.stringify({ contentType: 'application/json', messageId: `m-${serial}`, correlationId: `c-${serial}` }),
    headersJson: JSON.stringify(TYPED_HEADERS), deliveryExchange: 'dlx', deliveryRoutingKey: 'orders.q',
    deathReason: 'rejected', attempts: 3, originExchange: 'orders', originRoutingKeys: ['order.placed'], originQueue: 'orders.q',
    firstDeathAt: null, lastDeathAt: null,
    errorType: 'com.acme.StockException', errorMessage: 'SKU 1, "A"\nout of stock', errorStack: 'com.acme.StockException: SKU 1\n\tat com.acme.Stock.reserve(Stock.java:42)',
    failureKind: 'exhausted', service: 'orders', serviceVersion: '1.5.0', framework: 'spring', entityKey: 'order-1',
    signature: 'v1:export-stock', title: 'StockException: SKU <int> out of stock', messagePattern: null,
    flags: [], lineageOriginId: null, replayCount: 0, status: 'dead',
    ...overrides,
  }
}

const SECRET_EMAIL = 'jane.doe@example.com'
const SECRET_PASSWORD = 'Tr0ub4dor&3x'

describe('export API', () => {
  let db: TestDb
  let sourceId = ''
  let stockGroup = ''
  let secretGroup = ''
  let secretId = ''
  const now = Date.now()

  async function stored(id: string): Promise<{ body: Buffer; headers: TypedTable; x_death: TypedValue | null }> {
    const { rows } = await db.sql.query<{ body: Buffer; headers: TypedTable; x_death: TypedValue | null }>("SELECT body, headers, headers -> 'x-death' AS x_death FROM dead_letters WHERE id = $1", [id])
    return rows[0]
  }
  const idsInOrder = async (where = 'TRUE', params: unknown[] = []) =>
    (await db.sql.query<{ id: string }>(`SELECT id::text FROM dead_letters WHERE ${where} ORDER BY failed_at DESC, id DESC`, params)).rows.map((r) => r.id)
  const text = async (response: Promise<Response>) => {
    const r = await response
    return { status: r.status, headers: r.headers, text: await r.text() }
  }
  const jsonLines = (body: string) => body.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Json)

  beforeAll(async () => {
    db = await createTestDb()
    const created = await sourcesRoute.POST(new Request(`${base}/api/sources`, { method: 'POST', body: JSON.stringify({ queue: 'orders.dlq', confirmNotWorkQueue: true }), headers: ADMIN_AUTH }), ctx({}))
    sourceId = (await created.json()).id
    // Shared failure times (ties broken by id) and sub-millisecond ones: the keyset cursor must be exact.
    const rows = [
      ...BODIES.map((b, i) => row({ failedAt: new Date(now - 60_000 - i * 1000), body: b.body, bodyEncoding: b.encoding })),
      ...Array.from({ length: 40 }, (_, i) => row({ failedAt: new Date(now - 120_000 - Math.floor(i / 4) * 1000), serviceVersion: i % 2 ? '1.6.0' : '1.5.0' })),
      row({
        failedAt: new Date(now - 30_000),
        body: Buffer.from(JSON.stringify({ customer: { email: SECRET_EMAIL, password: SECRET_PASSWORD }, items: [{ card: '4111 1111 1111 1111' }] })),
        headersJson: JSON.stringify({ Authorization: { t: 'S', v: `Bearer ${SECRET_PASSWORD}` }, 'x-ctx': { t: 'F', v: { 'User-Email': { t: 'S', v: SECRET_EMAIL } } } }),
        errorMessage: `login failed for ${SECRET_EMAIL}`, errorStack: `password=${SECRET_PASSWORD}`, entityKey: SECRET_EMAIL,
        signature: 'v1:export-secret', title: `Login failed for ${SECRET_EMAIL}`, errorType: 'AuthException',
      }),
    ]
    await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows })
    await db.sql.query(`UPDATE dead_letters SET failed_at = failed_at + interval '123 microseconds' WHERE id % 3 = 0`)
    await db.sql.query(`UPDATE dead_letter_states SET failed_at = failed_at + interval '123 microseconds' WHERE dead_letter_id % 3 = 0`)
    // A "text" body that is not UTF-8 (never written by the drainer, but possible): its page is read as bytes instead.
    await db.sql.query(`UPDATE dead_letters SET body = '\\x7b22223a22c328ff227d'::bytea, body_size = 10 WHERE id = (SELECT max(id) FROM dead_letters WHERE body_encoding = 'json' AND body_size < 20)`)
    const { rows: groups } = await db.sql.query<{ id: string; signature: string }>('SELECT id::text, signature FROM error_groups')
    stockGroup = groups.find((g) => g.signature === 'v1:export-stock')!.id
    secretGroup = groups.find((g) => g.signature === 'v1:export-secret')!.id
    secretId = (await idsInOrder('group_id = $1', [secretGroup]))[0]
  })
  afterAll(async () => db?.drop())

  describe('JSON Lines', () => {
    it('round-trips bodies and typed headers exactly, every row once, newest first', async () => {
      const r = await text(exportGet('?format=jsonl'))
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8')
      expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="lazarus-messages-\d{8}T\d{6}Z\.jsonl"$/)
      const lines = jsonLines(r.text)
      expect(lines.map((l) => l.id)).toEqual(await idsInOrder())
      for (const line of lines) {
        if (line.id === secretId) continue
        const s = await stored(line.id)
        expect(Buffer.from(line.body.base64, 'base64').equals(s.body), `body of ${line.id}`).toBe(true)
        expect(line.body.redacted).toBe(false)
        expect(line.headersTyped).toEqual(s.headers)
        // Byte-exact on the wire too: the typed table re-encodes to the same AMQP field table.
        expect(encodeTypedTable(line.headersTyped).equals(encodeTypedTable(s.headers))).toBe(true)
        expect(line.xDeathTyped).toEqual(s.x_death)
        expect(line.body.text).toBe(line.body.encoding === 'binary' ? null : s.body.toString('utf8'))
      }
      const sample = lines.find((l) => l.id !== secretId)
      expect(sample.headersTyped['x-int64']).toEqual({ t: 'l', v: '-9007199254740993' })
      expect(sample.properties).toMatchObject({ contentType: 'application/json' })
      expect(sample.xDeath[0]).toMatchObject({ queue: 'orders.q', reason: 'rejected', count: 3 })
      expect(sample).toMatchObject({ source: { id: sourceId, queue: 'orders.dlq' }, status: 'dead', error: { type: 'com.acme.StockException' }, group: { id: stockGroup } })
      // ISO 8601 with the database's microseconds (trailing zeros dropped), exactly what is stored.
      for (const line of lines) expect(new Date(line.failedAt).toISOString().slice(0, 19)).toBe(line.failedAt.slice(0, 19))
      expect(lines.every((l) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(l.failedAt))).toBe(true)
      const { rows: exact } = await db.sql.query<{ id: string; us: string }>(`SELECT id::text, to_char(failed_at AT TIME ZONE 'UTC', 'US') AS us FROM dead_letters`)
      for (const { id, us } of exact) expect(lines.find((l) => l.id === id).failedAt).toMatch(new RegExp(`\\.${us.replace(/0+$/, '')}Z$|:\\d\\dZ$`))
    })

    it('redacts secrets in body, headers, error, entity key and title', async () => {
      const r = await text(exportGet(`?format=jsonl&ids=${secretId}`))
      expect(r.text).not.toContain(SECRET_EMAIL)
      expect(r.text).not.toContain(SECRET_PASSWORD)
      expect(r.text).not.toContain('4111 1111 1111 1111')
      const [line] = jsonLines(r.text)
      expect(line.body.redacted).toBe(true)
      expect(JSON.parse(Buffer.from(line.body.base64, 'base64').toString())).toEqual({
        customer: { email: '[REDACTED:email]', password: '[REDACTED]' },
        items: [{ card: '[REDACTED:card]' }],
      })
      expect(line.headersTyped.Authorization).toEqual({ t: 'S', v: '[REDACTED]' })
      expect(line.headersTyped['x-ctx']).toEqual({ t: 'F', v: { 'User-Email': { t: 'S', v: '[REDACTED:email]' } } })
      expect(line.entityKey).toBe('[REDACTED:email]')
    })

    it('pages along the keyset with exact cursors, bounded by rows and by body bytes', async () => {
      const expected = await idsInOrder()
      for (const options of [{ pageRows: 7 }, { pageRows: 1000, pageBytes: 1 }, { pageRows: 3, pageBytes: 300 }]) {
        const seen: string[] = []
        let largest = 0
        let pages = 0
        for await (const page of readExportPages(db.sql, { filter: {} }, options)) {
          seen.push(...page.map((r) => r.id))
          largest = Math.max(largest, page.length)
          pages++
          // A page stops once its bodies reach the budget: only its last row may cross it.
          if (options.pageBytes) expect(page.slice(0, -1).reduce((sum, r) => sum + r.body_size, 0)).toBeLessThan(options.pageBytes)
        }
        expect(seen, JSON.stringify(options)).toEqual(expected)
        expect(largest).toBeLessThanOrEqual(options.pageRows)
        expect(pages).toBeGreaterThanOrEqual(Math.ceil(expected.length / options.pageRows))
      }
    })

    it('a message stored inside a page after its boundary was read is exported once, in order, and pushes nothing out', async () => {
      // A page is a boundary statement (its last key and row count), then the rows up to that key, LIMIT that count.
      // A row stored between the two falls inside the page: the LIMIT then cuts the page's last row, which the next
      // page must still begin with.
      const service = 'paging-race'
      await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: Array.from({ length: 6 }, (_, i) => row({ failedAt: new Date(now - 200_000 - i * 1000), service, signature: 'v1:paging-race', title: 'Paging race' })) })
      let stored = 0
      const racing: Sql = {
        ...db.sql,
        query: async (text, params, options) => {
          if (stored === 0 && text.includes('body_text') && text.includes('LIMIT $')) {
            stored++
            // Newer than every row: the first page has no upper bound, so it lands in the page's range, first.
            await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: [row({ failedAt: new Date(now - 150_000), service, signature: 'v1:paging-race', title: 'Paging race' })] })
          }
          return db.sql.query(text, params, options)
        },
      }
      const pages: string[][] = []
      for await (const page of readExportPages(racing, { filter: { service } }, { pageRows: 4 })) pages.push(page.map((r) => r.id))
      expect(stored).toBe(1)
      const expected = await idsInOrder('service = $1', [service])
      expect(expected).toHaveLength(7)
      expect(pages.flat()).toEqual(expected)
      // The first page was 4 rows when its boundary was read; the new row took a place in it and its last row moved on.
      expect(pages[0]).toHaveLength(4)
      expect(pages[0][0]).toBe(expected[0])
    })

    it('exports a group, a filter, a text search and a list of ids', async () => {
      const cases: [string, string[]][] = [
        [`group=${stockGroup}`, await idsInOrder('group_id = $1', [stockGroup])],
        [`group=${stockGroup}&serviceVersion=1.6.0`, await idsInOrder(`group_id = $1 AND service_version = '1.6.0'`, [stockGroup])],
        ['q=HYPERLINK', await idsInOrder(`body_preview LIKE '%HYPERLINK%'`)],
        [`ids=${secretId},999999`, [secretId]],
      ]
      for (const [query, ids] of cases) {
        const r = await text(exportGet(`?format=jsonl&${query}`))
        expect(r.status, query).toBe(200)
        expect(jsonLines(r.text).map((l) => l.id), query).toEqual(ids)
        expect(ids.length).toBeGreaterThan(0)
      }
      const group = await exportGet(`?format=jsonl&group=${stockGroup}`)
      expect(group.headers.get('content-disposition')).toMatch(new RegExp(`filename="lazarus-group-${stockGroup}-\\d{8}T\\d{6}Z\\.jsonl"`))
    })
  })

  describe('CSV', () => {
    it('parses with a standard CSV parser, one record per message, bodies with commas, quotes and newlines intact', async () => {
      const r = await exportGet('?format=csv')
      expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present')
      const raw = Buffer.from(await r.arrayBuffer())
      expect([...raw.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
      const records = parseCsv(raw, { bom: true, columns: true }) as Record<string, string>[]
      expect(records.map((rec) => rec.id)).toEqual(await idsInOrder())
      for (const rec of records) {
        if (rec.id === secretId) continue
        const s = await stored(rec.id)
        const { rows } = await db.sql.query<{ body_encoding: string; error_message: string }>('SELECT body_encoding, error_message FROM dead_letters WHERE id = $1', [rec.id])
        const expectedBody = rows[0].body_encoding === 'binary' ? `base64:${s.body.toString('base64')}` : s.body.toString('utf8')
        // The formula guard is the only change a cell ever gets.
        expect(rec.body.replace(/^'(?=[=+\-@])/, '')).toBe(expectedBody)
        expect(rec.error_message).toBe(rows[0].error_message)
        expect(rec.source_queue).toBe('orders.dlq')
        expect(JSON.parse(rec.headers)['x-exception-message']).toBe('Stock, "quoted"\nsecond line')
      }
      expect(records.find((rec) => rec.body.includes('HYPERLINK'))!.body).toBe(`'=HYPERLINK("http://evil.example","click")`)
      const secret = records.find((rec) => rec.id === secretId)!
      expect(JSON.stringify(secret)).not.toContain(SECRET_EMAIL)
      expect(JSON.stringify(secret)).not.toContain(SECRET_PASSWORD)
    })
  })

  describe('Markdown tickets', () => {
    it('a group ticket has the summary, counts, time range, versions, samples and a link back', async () => {
      const r = await text(groupTicketRoute.GET(new Request(`${base}/api/groups/${stockGroup}/ticket`, { headers: ADMIN_AUTH }), ctx({ id: stockGroup })))
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
      const md = r.text
      expect(md).toContain(`## StockException: SKU \\<int\\> out of stock`)
      // The link back shows its address as it is: no `https:\/\/` in the text.
      expect(md).toContain(`Error group #${stockGroup} in Lazarus: <${base}/groups/${stockGroup}>\n`)
      expect(md).not.toContain(':\\/\\/')
      expect(md).toMatch(/- \*\*Messages:\*\* 45 \(/)
      expect(md).toMatch(/- \*\*Time range:\*\* \d{4}/)
      expect(md).toContain('`1.5.0`')
      expect(md).toContain('`1.6.0`')
      expect(md).toContain('### Sample messages (3 of 45)')
      expect(md).toContain('**Stack trace**')
      expect(md).toContain('| queue | reason | count | exchange | routing keys | time |')
      expect(md).toContain('"x-int64": {')
    })

    it('a message ticket is redacted', async () => {
      const r = await text(messageTicketRoute.GET(new Request(`${base}/api/messages/${secretId}/ticket`, { headers: ADMIN_AUTH }), ctx({ id: secretId })))
      expect(r.status).toBe(200)
      expect(r.text).toContain(`Message #${secretId}`)
      expect(r.text).toContain(`(<${base}/messages/${secretId}>)`)
      expect(r.text).not.toContain(SECRET_EMAIL)
      expect(r.text).not.toContain(SECRET_PASSWORD)
      expect(r.text).toContain('\\[REDACTED:email\\]')
    })

    it('format=md of a filter summarises the selection with a link to the messages page', async () => {
      const r = await text(exportGet(`?format=md&service=orders&status=dead`))
      expect(r.status).toBe(200)
      expect(r.headers.get('content-disposition')).toMatch(/\.md"$/)
      expect(r.text).toContain(`## Dead letters: 46 messages (status \`dead\`, service \`orders\`)`)
      expect(r.text).toContain(`(<${base}/messages?status=dead&service=orders>)`)
      expect(r.text).toContain('- **Error groups:** ')
      expect(r.text).toContain('### Sample messages (3 of 46)')
      expect(r.text).not.toContain(SECRET_EMAIL)
      // A filter value that is itself a secret stays out of the ticket, link included.
      const byEmail = await text(exportGet(`?format=md&entity=${encodeURIComponent(SECRET_EMAIL)}`))
      expect(byEmail.text).toContain('## Dead letters: 1 message (entity `[REDACTED:email]`)')
      expect(byEmail.text).toContain(`(<${base}/messages>) (filter values that hold secrets are left out)`)
      expect(byEmail.text).not.toContain(SECRET_EMAIL)
      expect(byEmail.text).not.toContain(encodeURIComponent(SECRET_EMAIL))
      const group = await text(exportGet(`?format=md&group=${stockGroup}`))
      expect(group.text).toContain('### Sample messages (3 of 45)')
      expect(group.text).toContain(`Error group #${stockGroup}`)
    })
  })

  describe('bad requests', () => {
    const cases: { name: string; query: string; status: number; message: RegExp }[] = [
      { name: 'no format', query: '', status: 400, message: /format/ },
      { name: 'unknown format', query: '?format=xml', status: 400, message: /format must be one of jsonl, csv, md/ },
      { name: 'unknown parameter', query: '?format=csv&colour=red', status: 400, message: /colour|unrecognized/i },
      { name: 'ids not numeric', query: '?format=csv&ids=1,abc', status: 400, message: /numeric message ids/ },
      { name: 'ids empty', query: '?format=csv&ids=,', status: 400, message: /at least one/ },
      { name: 'too many ids', query: `?format=csv&ids=${Array.from({ length: 10_001 }, (_, i) => i + 1).join(',')}`, status: 400, message: /at most 10000 ids/ },
      { name: 'ids with a filter', query: '?format=csv&ids=1&status=dead', status: 400, message: /ids cannot be combined with filters/ },
      { name: 'bad status', query: '?format=csv&status=zombie', status: 400, message: /status/ },
      { name: 'from after to', query: '?format=csv&from=2026-12-02&to=2026-12-01', status: 400, message: /from must be before to/ },
      { name: 'bad date', query: '?format=csv&from=yesterday', status: 400, message: /ISO 8601/ },
      { name: 'group not numeric', query: '?format=csv&group=abc', status: 400, message: /numeric id/ },
      { name: 'group missing', query: '?format=csv&group=987654', status: 404, message: /group 987654 not found/ },
      { name: 'group missing (md)', query: '?format=md&group=987654', status: 404, message: /group 987654 not found/ },
    ]
    it.each(cases)('$name → $status', async ({ query, status, message }) => {
      const r = await exportGet(query)
      expect(r.status).toBe(status)
      const body = (await r.json()) as Json
      expect(body.error.message).toMatch(message)
    })

    it('tickets of missing or malformed ids are 404', async () => {
      for (const id of ['987654', 'abc', '0']) {
        expect((await groupTicketRoute.GET(new Request(`${base}/api/groups/${id}/ticket`, { headers: ADMIN_AUTH }), ctx({ id }))).status).toBe(404)
        expect((await messageTicketRoute.GET(new Request(`${base}/api/messages/${id}/ticket`, { headers: ADMIN_AUTH }), ctx({ id }))).status).toBe(404)
      }
    })
  })

  describe('redaction settings', () => {
    const put = (body: unknown) =>
      redactionRoute.PUT(new Request(`${base}/api/settings/redaction`, { method: 'PUT', body: JSON.stringify(body), headers: ADMIN_AUTH }), ctx({}))

    it('a new database holds the default rules', async () => {
      const r = await redactionRoute.GET(new Request(`${base}/api/settings/redaction`, { headers: ADMIN_AUTH }), ctx({}))
      const body = (await r.json()) as Json
      expect(body.rules.map((rule: Json) => ({ kind: rule.kind, value: rule.value, enabled: rule.enabled }))).toEqual(DEFAULT_REDACTION_RULES)
      expect(body.detectors.map((d: Json) => d.name)).toEqual(['email', 'card-number', 'jwt', 'bearer-token', 'url-password', 'private-key', 'service-token'])
    })

    const invalid: { name: string; rules: unknown[]; message: RegExp }[] = [
      { name: 'empty-matching regex', rules: [{ kind: 'pattern', value: 'x*' }], message: /matches an empty string/ },
      { name: 'unknown detector', rules: [{ kind: 'detector', value: 'ssn-us' }], message: /unknown detector/ },
      { name: 'key of only wildcards', rules: [{ kind: 'key', value: '*-*' }], message: /at least one letter or digit/ },
      { name: 'duplicate key, other spelling', rules: [{ kind: 'key', value: 'api_key' }, { kind: 'key', value: 'API-Key' }], message: /duplicates rule 1/ },
      { name: 'unknown kind', rules: [{ kind: 'header', value: 'x' }], message: /kind/ },
      { name: 'extra field', rules: [{ kind: 'key', value: 'x', colour: 'red' }], message: /unrecognized|colour/i },
    ]
    it.each(invalid)('PUT refuses $name with 400', async ({ rules, message }) => {
      const r = await put({ rules })
      expect(r.status).toBe(400)
      expect(((await r.json()) as Json).error.message).toMatch(message)
    })

    it('PUT replaces the rules, and the next export applies them', async () => {
      const rules = [
        { kind: 'key', value: 'password', enabled: true },
        { kind: 'detector', value: 'email', enabled: false, description: 'off for this test' },
        { kind: 'pattern', value: 'Tr0ub4dor', enabled: true },
      ]
      const r = await put({ rules })
      expect(r.status).toBe(200)
      const body = (await r.json()) as Json
      expect(body.rules.map((rule: Json) => [rule.kind, rule.value, rule.enabled])).toEqual(rules.map((rule) => [rule.kind, rule.value, rule.enabled]))
      expect(body.updatedBy).toBe('LAZARUS_ADMIN_TOKEN')
      const line = jsonLines((await text(exportGet(`?format=jsonl&ids=${secretId}`))).text)[0]
      expect(JSON.stringify(line)).toContain(SECRET_EMAIL)
      expect(line.headersTyped.Authorization).toEqual({ t: 'S', v: 'Bearer [REDACTED]&3x' })
      const preview = await previewRoute.POST(new Request(`${base}/api/settings/redaction/preview`, { method: 'POST', body: JSON.stringify({ sample: 'password=1&mail=a@b.co' }), headers: ADMIN_AUTH }), ctx({}))
      expect(await preview.json()).toEqual({ redacted: 'password=[REDACTED]&mail=a@b.co', changed: true })
      const unsaved = await previewRoute.POST(
        new Request(`${base}/api/settings/redaction/preview`, { method: 'POST', body: JSON.stringify({ sample: 'mail a@b.co', rules: [{ kind: 'detector', value: 'email' }] }), headers: ADMIN_AUTH }),
        ctx({}),
      )
      expect(await unsaved.json()).toEqual({ redacted: 'mail [REDACTED:email]', changed: true })
      // Back to the defaults for the other tests of this file.
      expect((await put({ rules: DEFAULT_REDACTION_RULES })).status).toBe(200)
      expect(createRedactor(DEFAULT_REDACTION_RULES).active).toBe(true)
    })

    // Patterns run on RE2 (linear time): what it cannot compile is refused as unprocessable, naming the rule.
    const unusable: { name: string; rules: unknown[]; message: RegExp }[] = [
      { name: 'a backreference', rules: [{ kind: 'key', value: 'iban' }, { kind: 'pattern', value: '(ord)-\\1' }], message: /pattern rule 2 \("\(ord\)-\\\\1"\): backreferences/ },
      { name: 'a lookahead', rules: [{ kind: 'pattern', value: 'ord(?=-\\d)' }], message: /pattern rule 1 .*lookaround/ },
      { name: 'a lookbehind, disabled', rules: [{ kind: 'pattern', value: '(?<=ord-)\\d+', enabled: false }], message: /pattern rule 1 .*lookaround/ },
      { name: 'invalid syntax', rules: [{ kind: 'pattern', value: '(unclosed' }], message: /pattern rule 1 .*not a valid regular expression/ },
    ]
    it.each(unusable)('PUT and preview refuse $name with 422', async ({ rules, message }) => {
      const r = await put({ rules })
      expect(r.status).toBe(422)
      const body = (await r.json()) as Json
      expect(body.error).toMatchObject({ code: 'unprocessable', message: expect.stringMatching(message) })
      // The settings page shows the message beside the rule it belongs to.
      expect(body.error.details[0].path).toEqual(['rules', rules.length - 1, 'value'])
      const preview = await previewRoute.POST(
        new Request(`${base}/api/settings/redaction/preview`, { method: 'POST', body: JSON.stringify({ sample: 'ord-1', rules }), headers: ADMIN_AUTH }),
        ctx({}),
      )
      expect(preview.status).toBe(422)
      expect(((await preview.json()) as Json).error.message).toMatch(message)
      // Nothing was stored.
      const settings = (await (await redactionRoute.GET(new Request(`${base}/api/settings/redaction`, { headers: ADMIN_AUTH }), ctx({}))).json()) as Json
      expect(settings.rules.map((rule: Json) => rule.value)).toEqual(DEFAULT_REDACTION_RULES.map((rule) => rule.value))
    })

    it('patterns that backtrack catastrophically in V8 are stored and answered at once', async () => {
      const rules = [{ kind: 'pattern', value: '(a|a)*b' }, { kind: 'pattern', value: '(q|q)*z' }, { kind: 'pattern', value: '(x+)+$' }]
      const preview = async (sample: string) =>
        (await (
          await previewRoute.POST(new Request(`${base}/api/settings/redaction/preview`, { method: 'POST', body: JSON.stringify({ sample, rules }), headers: ADMIN_AUTH }), ctx({}))
        ).json()) as Json
      const long = `${'a'.repeat(30_000)}c${'q'.repeat(30_000)}`
      expect(await preview(long)).toEqual({ redacted: long, changed: false })
      expect(await preview('aaab qqz')).toEqual({ redacted: '[REDACTED] [REDACTED]', changed: true })
      expect((await put({ rules })).status).toBe(200)
      expect((await put({ rules: DEFAULT_REDACTION_RULES })).status).toBe(200)
    })
  })

  describe('a stored rule that no longer compiles', () => {
    // What a rule written into the table by hand (or by an older version, on V8's syntax) looks like.
    const breakRules = () =>
      db.sql.query<{ id: string }>(`INSERT INTO redaction_rules (kind, value, position, updated_by) VALUES ('pattern', '(?<=card )\\d+', 999, 'dba') RETURNING id::text`)
    const repair = (id: string) => db.sql.query('DELETE FROM redaction_rules WHERE id = $1::bigint', [id])

    it('blocks exports, tickets and previews with 503 naming the rule, until it is removed', async () => {
      const { rows: [rule] } = await breakRules()
      try {
        const responses = [
          await exportGet(`?format=jsonl&ids=${secretId}`),
          await exportGet(`?format=csv&group=${secretGroup}`),
          await exportGet(`?format=md&group=${secretGroup}`),
          await groupTicketRoute.GET(new Request(`${base}/api/groups/${secretGroup}/ticket`, { headers: ADMIN_AUTH }), ctx({ id: secretGroup })),
          await messageTicketRoute.GET(new Request(`${base}/api/messages/${secretId}/ticket`, { headers: ADMIN_AUTH }), ctx({ id: secretId })),
          await previewRoute.POST(new Request(`${base}/api/settings/redaction/preview`, { method: 'POST', body: JSON.stringify({ sample: 'x' }), headers: ADMIN_AUTH }), ctx({})),
        ]
        for (const r of responses) {
          expect(r.status).toBe(503)
          const body = (await r.json()) as Json
          expect(body.error.code).toBe('unavailable')
          expect(body.error.message).toContain(`redaction rule #${rule.id} (pattern "(?<=card )\\\\d+")`)
          expect(body.error.message).toMatch(/lookaround .* blocked until it is fixed or removed/)
          expect(JSON.stringify(body)).not.toContain(SECRET_PASSWORD)
        }
      } finally {
        await repair(rule.id)
      }
      expect((await exportGet(`?format=jsonl&ids=${secretId}`)).status).toBe(200)
    })

    it('a disabled one blocks nothing', async () => {
      const { rows: [rule] } = await breakRules()
      await db.sql.query('UPDATE redaction_rules SET enabled = false WHERE id = $1::bigint', [rule.id])
      try {
        const r = await text(exportGet(`?format=jsonl&ids=${secretId}`))
        expect(r.status).toBe(200)
        expect(r.text).not.toContain(SECRET_PASSWORD)
      } finally {
        await repair(rule.id)
      }
    })
  })

  describe('bodies with a content encoding', () => {
    const secretBody = Buffer.from(JSON.stringify({ order: 7, password: SECRET_PASSWORD, customer: SECRET_EMAIL }))
    const redactedJson = { order: 7, password: '[REDACTED]', customer: '[REDACTED:email]' }
    const ids: Record<string, string> = {}

    beforeAll(async () => {
      const bodies: { name: string; body: Buffer; contentEncoding: string; encoding: IngestRow['bodyEncoding'] }[] = [
        { name: 'gzip', body: gzipSync(secretBody), contentEncoding: 'gzip', encoding: 'binary' },
        { name: 'base64', body: Buffer.from(secretBody.toString('base64')), contentEncoding: 'base64', encoding: 'text' },
        // 80 MiB of zeros in about 80 KiB: decoding must stop at 64 MiB.
        { name: 'bomb', body: gzipSync(Buffer.alloc(80 * 1024 * 1024), { level: 9 }), contentEncoding: 'gzip', encoding: 'binary' },
      ]
      await storeBatch({
        sql: db.sql,
        sourceId,
        sourceLabel: 'orders.dlq',
        rows: bodies.map((b, i) =>
          row({
            failedAt: new Date(now - 5_000 - i), body: b.body, bodyEncoding: b.encoding, service: 'payments', signature: 'v1:export-encoded',
            title: 'Encoded', propertiesJson: JSON.stringify({ contentType: 'application/json', contentEncoding: b.contentEncoding, messageId: `enc-${b.name}` }),
          }),
        ),
      })
      const { rows } = await db.sql.query<{ id: string; name: string }>(
        `SELECT id::text, substr(properties->>'messageId', 5) AS name FROM dead_letters WHERE properties->>'messageId' LIKE 'enc-%'`,
      )
      for (const r of rows) ids[r.name] = r.id
    })

    const exported = async (id: string) => jsonLines((await text(exportGet(`?format=jsonl&ids=${id}`))).text)[0]

    it('gzip: decoded, redacted and compressed again', async () => {
      const line = await exported(ids.gzip)
      expect(line.body).toMatchObject({ redacted: true, masked: null, text: null })
      expect(JSON.parse(gunzipSync(Buffer.from(line.body.base64, 'base64')).toString())).toEqual(redactedJson)
      expect(line.properties.contentEncoding).toBe('gzip')
    })

    it('base64: decoded, redacted and encoded again, in JSON Lines, CSV and tickets', async () => {
      const line = await exported(ids.base64)
      expect(line.body).toMatchObject({ redacted: true, masked: null })
      expect(JSON.parse(Buffer.from(line.body.text, 'base64').toString())).toEqual(redactedJson)
      const csv = parseCsv((await text(exportGet(`?format=csv&ids=${ids.base64}`))).text, { bom: true, columns: true }) as Record<string, string>[]
      expect(JSON.parse(Buffer.from(csv[0].body, 'base64').toString())).toEqual(redactedJson)
      const ticket = await text(messageTicketRoute.GET(new Request(`${base}/api/messages/${ids.base64}/ticket`, { headers: ADMIN_AUTH }), ctx({ id: ids.base64 })))
      expect(ticket.text).not.toContain(secretBody.toString('base64').slice(0, 40))
    })

    it('a gzip bomb is masked whole and flagged, not inflated', async () => {
      const line = await exported(ids.bomb)
      expect(line.body).toMatchObject({ redacted: true, masked: expect.stringMatching(/decodes \(gzip\) to more than 64 MiB/), text: '[REDACTED:body]' })
      expect(Buffer.from(line.body.base64, 'base64').toString()).toBe('[REDACTED:body]')
    })
  })
})
