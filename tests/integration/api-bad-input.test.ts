import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pipeToNodeResponse } from 'next/dist/server/pipe-readable'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callRoute, type HttpMethod, type RouteModule } from '../helpers/call-route'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'
import * as alertEventsRoute from '@/app/api/alerts/events/route'
import * as alertRulesRoute from '@/app/api/alerts/rules/route'
import * as webhooksRoute from '@/app/api/alerts/webhooks/route'
import * as auditRoute from '@/app/api/audit/route'
import * as oidcCallbackRoute from '@/app/api/auth/oidc/callback/route'
import * as exportRoute from '@/app/api/export/route'
import * as groupRoute from '@/app/api/groups/[id]/route'
import * as groupsRoute from '@/app/api/groups/route'
import * as messageBodyRoute from '@/app/api/messages/[id]/body/route'
import * as messageRoute from '@/app/api/messages/[id]/route'
import * as countRoute from '@/app/api/messages/count/route'
import * as resolveRoute from '@/app/api/messages/resolve/route'
import * as messagesRoute from '@/app/api/messages/route'
import * as pausesRoute from '@/app/api/pauses/route'
import * as replaysRoute from '@/app/api/replays/route'
import * as redactionRoute from '@/app/api/settings/redaction/route'
import * as sourceRoute from '@/app/api/sources/[id]/route'
import * as sourcesRoute from '@/app/api/sources/route'
import * as tokensRoute from '@/app/api/tokens/route'
import * as usersRoute from '@/app/api/users/route'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'

/**
 * Input that used to end in a 500 (or in a 200 that was wrong): NUL characters and lone surrogates, which PostgreSQL's
 * text and jsonb cannot hold; ids beyond bigint; cursors and dates JavaScript accepts and PostgreSQL refuses; stored
 * content types no HTTP header can carry; an export that failed after its 200 was sent.
 */

const BASE = 'http://lazarus.test'
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url')
const BEYOND_INT8 = '9223372036854775808'

type Answer = { status: number; body: any; headers: Headers }

async function call(module: RouteModule, method: HttpMethod, path: string, body?: unknown, params: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = body === undefined ? { method } : { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
  const response = await callRoute(module, method, new Request(BASE + path, init), params)
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // Not JSON: the test looks at the text.
  }
  return { status: response.status, body: parsed, headers: response.headers }
}

/** A 400 in the error envelope whose message names `field` and says why. */
function expectRefused(answer: Answer, field: string, why: RegExp) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400)
  expect(answer.body.error.code).toBe('invalid')
  expect(answer.body.error.message).toContain(`${field}: `)
  expect(answer.body.error.message).toMatch(why)
}

describe('bad input gets a 4xx, never a 500', () => {
  let db: TestDb
  let sourceId = ''
  let groupId = ''
  let messageId = ''
  let userId = ''
  const odd = { crlf: '', latin: '' }

  beforeAll(async () => {
    db = await createTestDb()
    const source = await call(sourcesRoute, 'POST', '/api/sources', { queue: 'orders.dlq', confirmNotWorkQueue: true })
    expect(source.status, JSON.stringify(source.body)).toBe(201)
    sourceId = source.body.id
    await storeBatch({
      sql: db.sql,
      sourceId,
      sourceLabel: 'orders.dlq',
      rows: [
        ingestRow({ entityKey: 'order-1', originQueue: 'orders.work', propertiesJson: JSON.stringify({ contentType: 'application/json' }), failedAt: new Date('2026-11-01T10:00:00Z') }),
        ingestRow({ body: Buffer.from('crlf'), bodyEncoding: 'text', propertiesJson: JSON.stringify({ contentType: 'text/plain\r\nX-Injected: 1' }), failedAt: new Date('2026-11-01T11:00:00Z') }),
        ingestRow({
          body: Buffer.from([0xff, 0x00, 0x41]),
          bodyEncoding: 'binary',
          bodyPreview: null,
          propertiesJson: JSON.stringify({ contentType: 'text/plain; charset=ünï中', contentEncoding: 'gzip\r\n' }),
          failedAt: new Date('2026-11-01T12:00:00Z'),
        }),
      ],
    })
    const { rows } = await db.sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM dead_letters ORDER BY id')
    ;[messageId, odd.crlf, odd.latin] = rows.map((r) => r.id)
    groupId = rows[0].group_id
    const user = await call(usersRoute, 'POST', '/api/users', { email: 'ann@lazarus.test', roles: [{ role: 'operator' }] })
    expect(user.status, JSON.stringify(user.body)).toBe(201)
    userId = user.body.user.id
  })
  afterAll(async () => db?.drop())

  describe('NUL characters and lone surrogates are refused where they come in, naming the field', () => {
    const cases: { name: string; call: () => Promise<Answer>; field: string; why?: RegExp }[] = [
      { name: 'text search', call: () => call(messagesRoute, 'GET', '/api/messages?q=%00'), field: 'q' },
      { name: 'count by entity', call: () => call(countRoute, 'GET', '/api/messages/count?entity=a%00b'), field: 'entity' },
      { name: 'groups by service', call: () => call(groupsRoute, 'GET', '/api/groups?service=%00'), field: 'service' },
      { name: 'audit by subject', call: () => call(auditRoute, 'GET', '/api/audit?subjectId=%00'), field: 'subjectId' },
      { name: 'pause reason', call: () => call(pausesRoute, 'POST', '/api/pauses', { sourceId, queue: 'orders.work', entityKey: 'order-1', reason: 'stop\u0000' }), field: 'reason' },
      { name: 'pause entity', call: () => call(pausesRoute, 'POST', '/api/pauses', { sourceId, queue: 'orders.work', entityKey: '\u0000', reason: 'stop' }), field: 'entityKey' },
      { name: 'group note', call: () => call(groupRoute, 'PATCH', `/api/groups/${groupId}`, { note: 'see\u0000' }, { id: groupId }), field: 'note' },
      { name: 'group note, lone surrogate', call: () => call(groupRoute, 'PATCH', `/api/groups/${groupId}`, { note: 'half \ud83d' }, { id: groupId }), field: 'note', why: /valid Unicode/ },
      { name: 'source queue', call: () => call(sourcesRoute, 'POST', '/api/sources', { queue: 'a\u0000.dlq', confirmNotWorkQueue: true }), field: 'queue' },
      { name: 'source entity-key header', call: () => call(sourceRoute, 'PATCH', `/api/sources/${sourceId}`, { entityKey: { kind: 'header', name: 'x\u0000' } }, { id: sourceId }), field: 'entityKey.name' },
      { name: 'source default target', call: () => call(sourceRoute, 'PATCH', `/api/sources/${sourceId}`, { defaultTarget: { type: 'custom', exchange: 'x\u0000', routingKey: 'k' } }, { id: sourceId }), field: 'defaultTarget.exchange' },
      { name: 'webhook URL', call: () => call(webhooksRoute, 'POST', '/api/alerts/webhooks', { url: 'https://93.184.215.14/hook\u0000' }), field: 'url' },
      { name: 'replay filter', call: () => call(replaysRoute, 'POST', '/api/replays', { selection: { filter: { q: '\u0000' } }, dryRun: true }), field: 'selection.filter.q' },
      { name: 'replay custom target', call: () => call(replaysRoute, 'POST', '/api/replays', { selection: { ids: [messageId] }, target: { type: 'custom', exchange: 'e', routingKey: '\u0000' }, dryRun: true }), field: 'target.routingKey' },
      { name: 'resolve reason', call: () => call(resolveRoute, 'POST', '/api/messages/resolve', { selection: { ids: [messageId] }, reason: 'done\u0000' }), field: 'reason' },
      { name: 'resolve reason, lone surrogate', call: () => call(resolveRoute, 'POST', '/api/messages/resolve', { selection: { ids: [messageId] }, reason: '\udc00' }), field: 'reason', why: /valid Unicode/ },
      { name: 'resolve filter', call: () => call(resolveRoute, 'POST', '/api/messages/resolve', { selection: { filter: { service: 'a\u0000' } }, reason: 'done' }), field: 'selection.filter.service' },
      { name: 'redaction rule', call: () => call(redactionRoute, 'PUT', '/api/settings/redaction', { rules: [{ kind: 'key', value: '*pass\u0000*' }] }), field: 'rules.0.value' },
      { name: 'user display name', call: () => call(usersRoute, 'POST', '/api/users', { email: 'bob@lazarus.test', displayName: 'Bob\u0000' }), field: 'displayName' },
      { name: 'token name', call: () => call(tokensRoute, 'POST', '/api/tokens', { name: 'ci\u0000', role: 'viewer', userId }), field: 'name' },
    ]
    for (const c of cases) it(c.name, async () => expectRefused(await c.call(), c.field, c.why ?? /NUL/))

    it('the export refuses it before any byte of the file is sent', async () => {
      const answer = await call(exportRoute, 'GET', '/api/export?format=jsonl&q=%00')
      expectRefused(answer, 'q', /NUL/)
      expect(answer.headers.get('content-type')).toContain('application/json')
      expect(answer.headers.get('content-disposition')).toBeNull()
    })
  })

  describe('ids beyond bigint are refused, not sent to PostgreSQL', () => {
    const cases: { name: string; call: () => Promise<Answer>; field: string; why?: RegExp }[] = [
      { name: 'message list by group', call: () => call(messagesRoute, 'GET', `/api/messages?group=${BEYOND_INT8}`), field: 'group' },
      { name: 'message count by source', call: () => call(countRoute, 'GET', '/api/messages/count?source=9999999999999999999'), field: 'source' },
      { name: 'export of ids', call: () => call(exportRoute, 'GET', `/api/export?format=csv&ids=${messageId},${BEYOND_INT8}`), field: 'ids.1' },
      { name: 'alert history cursor', call: () => call(alertEventsRoute, 'GET', '/api/alerts/events?cursor=99999999999999999999'), field: 'cursor', why: /cursor is not valid/ },
      { name: 'alert rule source', call: () => call(alertRulesRoute, 'POST', '/api/alerts/rules', { kind: 'source-rate', sourceId: BEYOND_INT8, thresholdPerMinute: 1 }), field: 'sourceId' },
      { name: 'replay of ids', call: () => call(replaysRoute, 'POST', '/api/replays', { selection: { ids: [messageId, BEYOND_INT8] }, dryRun: true }), field: 'selection.ids.1' },
      { name: 'resolve of a group', call: () => call(resolveRoute, 'POST', '/api/messages/resolve', { selection: { groupId: BEYOND_INT8 }, reason: 'x' }), field: 'selection.groupId' },
      { name: 'pause of a source', call: () => call(pausesRoute, 'POST', '/api/pauses', { sourceId: BEYOND_INT8, entityKey: 'e', reason: 'r' }), field: 'sourceId' },
      { name: 'token for a user', call: () => call(tokensRoute, 'POST', '/api/tokens', { name: 'ci', role: 'viewer', userId: BEYOND_INT8 }), field: 'userId' },
    ]
    for (const c of cases) it(c.name, async () => expectRefused(await c.call(), c.field, c.why ?? /numeric (message )?id/))

    it('the largest bigint is an id (not found); one more is not an id (not found either)', async () => {
      for (const id of ['9223372036854775807', BEYOND_INT8, '99999999999999999999']) {
        const answer = await call(messageRoute, 'GET', `/api/messages/${id}`, undefined, { id })
        expect(answer.status, id).toBe(404)
        expect(answer.body.error.code).toBe('not_found')
      }
    })
  })

  describe('cursors must be what a list wrote', () => {
    const forged = {
      'a date V8 reads as 2001 (MXw1 is "1|5")': 'MXw1',
      'an impossible date': b64('2026-02-30T00:00:00.000Z|1'),
      'year 0': b64('0000-01-01T00:00:00.000Z|1'),
      'an id beyond bigint': b64(`2026-01-01T00:00:00.000Z|${BEYOND_INT8}`),
      'three parts': b64('2026-01-01T00:00:00.000Z|1|2'),
    }
    for (const [what, cursor] of Object.entries(forged)) {
      it(`refuses ${what}`, async () => {
        for (const [module, path] of [[messagesRoute, '/api/messages'], [messagesRoute, '/api/messages?q=stock'], [auditRoute, '/api/audit'], [replaysRoute, '/api/replays']] as const) {
          const answer = await call(module, 'GET', `${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}`)
          expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(400)
          expect(answer.body.error.message).toMatch(/cursor is not valid/)
        }
      })
    }

    it('still follows the cursors the lists write, milliseconds or microseconds', async () => {
      const first = await call(messagesRoute, 'GET', '/api/messages?limit=1')
      expect(first.status).toBe(200)
      const next = await call(messagesRoute, 'GET', `/api/messages?limit=1&cursor=${first.body.nextCursor}`)
      expect(next.status).toBe(200)
      expect(next.body.messages[0].id).not.toBe(first.body.messages[0].id)
      const micro = await call(replaysRoute, 'GET', `/api/replays?cursor=${b64('2030-01-01T00:00:00.123456Z|5')}`)
      expect(micro.status, JSON.stringify(micro.body)).toBe(200)
    })
  })

  describe('dates JavaScript rolls over or PostgreSQL refuses are refused', () => {
    for (const [what, query] of [
      ['30 February', 'from=2026-02-30'],
      ['29 February of a common year', 'to=2026-02-29T10:00:00Z'],
      ['year 0', 'to=0000-01-01'],
      ['past year 9999 once in UTC', 'to=9999-12-31T23:00:00-05:00'],
      ['hour 24', 'from=2026-11-30T24:00:00Z'],
    ]) {
      it(what, async () => expectRefused(await call(messagesRoute, 'GET', `/api/messages?${query}`), query.split('=')[0], /ISO 8601/))
    }

    it('in a replay filter too', async () => {
      expectRefused(await call(replaysRoute, 'POST', '/api/replays', { selection: { filter: { from: '2026-02-30' } }, dryRun: true }), 'selection.filter.from', /ISO 8601/)
    })

    it('accepts leap days, fractions and offsets', async () => {
      const answer = await call(messagesRoute, 'GET', `/api/messages?from=2024-02-29&to=${encodeURIComponent('2026-11-30T10:00:00.123456+01:00')}`)
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body.messages.map((m: { id: string }) => m.id)).toContain(messageId)
    })
  })

  describe('raw body download whatever content type the message was published with', () => {
    /** An RFC 8187 ext-value back to its text. */
    const decodeExtValue = (value: string) => decodeURIComponent(value.replace(/^UTF-8''/, ''))

    it('CR and LF in the content type', async () => {
      const response = await callRoute(messageBodyRoute, 'GET', new Request(`${BASE}/api/messages/${odd.crlf}/body`), { id: odd.crlf })
      expect(response.status).toBe(200)
      expect(Buffer.from(await response.arrayBuffer()).toString()).toBe('crlf')
      expect(response.headers.get('content-type')).toBe('text/plain')
      expect(response.headers.get('x-injected')).toBeNull()
      expect(response.headers.get('x-original-content-type')).toBe("UTF-8''text%2Fplain%0D%0AX-Injected%3A%201")
      expect(decodeExtValue(response.headers.get('x-original-content-type')!)).toBe('text/plain\r\nX-Injected: 1')
    })

    it('characters above U+00FF in the content type, CR LF in the encoding', async () => {
      const response = await callRoute(messageBodyRoute, 'GET', new Request(`${BASE}/api/messages/${odd.latin}/body`), { id: odd.latin })
      expect(response.status).toBe(200)
      expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([0xff, 0x00, 0x41]))
      expect(response.headers.get('content-type')).toBe('text/plain')
      expect(decodeExtValue(response.headers.get('x-original-content-type')!)).toBe('text/plain; charset=ünï中')
      expect(decodeExtValue(response.headers.get('x-original-content-encoding')!)).toBe('gzip\r\n')
    })

    it('an ordinary content type passes unchanged', async () => {
      const response = await callRoute(messageBodyRoute, 'GET', new Request(`${BASE}/api/messages/${messageId}/body`), { id: messageId })
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('application/json')
      expect(response.headers.get('x-original-content-type')).toBe('application/json')
    })
  })

  it('a provider error cut mid-emoji on the single sign-on callback is a redirect, not a 500', async () => {
    const error = `a${'🐇'.repeat(300)}`
    const response = await callRoute(oidcCallbackRoute, 'GET', new Request(`${BASE}/api/auth/oidc/callback?error=${encodeURIComponent(error)}`), {}, { anonymous: true })
    expect(response.status).toBe(303)
    expect(new URL(response.headers.get('location')!).searchParams.get('error')).toContain(`(a${'🐇'.repeat(99)})`)
  })

  describe('an export that fails half-way cannot pass for a complete file', () => {
    const ROWS = 2_000

    beforeAll(async () => {
      // Four export pages (500 rows each): the failure falls after the 200 and some rows, whatever was prefetched.
      const rows = Array.from({ length: ROWS }, (_, i) => ingestRow({ failedAt: new Date(Date.UTC(2026, 9, 1) + i * 1000), signature: 'v1:bulk', title: 'Bulk' }))
      for (let i = 0; i < ROWS; i += 500) await storeBatch({ sql: db.sql, sourceId, sourceLabel: 'orders.dlq', rows: rows.slice(i, i + 500) })
    })

    /**
     * Starts an export, then makes every page query that starts after the route answered fail (`repair` undoes it).
     * The export reads at most two pages ahead of its consumer, and nothing consumes it before the rename.
     */
    async function failingExport(format: 'jsonl' | 'csv') {
      const response = await callRoute(exportRoute, 'GET', new Request(`${BASE}/api/export?format=${format}`))
      expect(response.status).toBe(200)
      await db.sql.query('ALTER TABLE dead_letter_states RENAME TO dead_letter_states_gone')
      return response
    }
    const repair = () => db.sql.query('ALTER TABLE dead_letter_states_gone RENAME TO dead_letter_states')

    async function readAll(body: ReadableStream<Uint8Array>): Promise<{ text: string; error: unknown }> {
      const reader = body.getReader()
      const chunks: Buffer[] = []
      try {
        for (;;) {
          const { done, value } = await reader.read()
          if (done) return { text: Buffer.concat(chunks).toString('utf8'), error: null }
          chunks.push(Buffer.from(value))
        }
      } catch (error) {
        return { text: Buffer.concat(chunks).toString('utf8'), error }
      }
    }

    it('a failure on the first page is an error response, not a 200 that breaks off', async () => {
      await db.sql.query('ALTER TABLE dead_letter_states RENAME TO dead_letter_states_gone')
      try {
        const answer = await call(exportRoute, 'GET', '/api/export?format=jsonl')
        expect(answer.status).toBe(500)
        // A server-side failure names its request (the X-Request-Id header, on its log lines too), nothing more.
        expect(answer.body).toEqual({ error: { code: 'internal', message: 'Internal server error', details: { requestId: answer.headers.get('x-request-id') } } })
        expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
        expect(answer.headers.get('content-disposition')).toBeNull()
      } finally {
        await repair()
      }
    })

    it('JSON Lines: the rows read so far, a last line saying it failed, then an error', async () => {
      const response = await failingExport('jsonl')
      try {
        const { text, error } = await readAll(response.body!)
        expect(error).toBeTruthy()
        const lines = text.trimEnd().split('\n').map((line) => JSON.parse(line))
        expect(lines.length).toBeGreaterThan(1)
        expect(lines.length).toBeLessThan(ROWS)
        expect(lines.at(-1)).toEqual({
          error: { code: 'internal', message: `The export failed after ${lines.length - 1} rows; this file is incomplete`, details: { requestId: response.headers.get('x-request-id') } },
        })
        expect(lines.slice(0, -1).every((line) => typeof line.id === 'string')).toBe(true)
      } finally {
        await repair()
      }
    })

    it('CSV: the stream errors', async () => {
      const response = await failingExport('csv')
      try {
        const { text, error } = await readAll(response.body!)
        expect(error).toBeTruthy()
        expect(text.split('\r\n').length).toBeLessThan(ROWS)
      } finally {
        await repair()
      }
    })

    it('over HTTP, as Next serves it, the client sees an aborted transfer', async () => {
      let response: Response | undefined
      const server = http.createServer(async (_req, res) => {
        response = await failingExport('jsonl')
        res.writeHead(response.status, Object.fromEntries(response.headers))
        await pipeToNodeResponse(response.body!, res).catch(() => {})
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        const { port } = server.address() as AddressInfo
        const outcome = await new Promise<{ status: number; complete: boolean; body: string }>((resolve, reject) => {
          http.get({ host: '127.0.0.1', port, path: '/api/export' }, (res) => {
            const chunks: Buffer[] = []
            res.on('data', (chunk: Buffer) => chunks.push(chunk))
            const done = () => resolve({ status: res.statusCode!, complete: res.complete, body: Buffer.concat(chunks).toString('utf8') })
            res.on('end', done)
            res.on('aborted', done)
            res.on('error', done)
          }).on('error', reject)
        })
        expect(outcome.status).toBe(200)
        // Node's client: `complete` is false when the connection closed before the chunked body's end.
        expect(outcome.complete).toBe(false)
        expect(outcome.body.trimEnd().split('\n').length).toBeLessThan(ROWS)
      } finally {
        server.close()
        await repair()
      }
    })
  })
})
