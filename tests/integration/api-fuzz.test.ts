import { appendFileSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callRoute, methodsOf, type HttpMethod, type RouteModule, type RouteParams } from '../helpers/call-route'
import { brokerConnection } from '../helpers/broker'
import { ingestRow } from '../helpers/ingest-row'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { storeBatch } from '@/lib/server/engines/drainer/store-batch'

/**
 * Every route under app/api, every exported method, called with hostile path params, query params and JSON bodies:
 * no answer may be a 5xx, every 4xx must carry the error envelope, and every 2xx body must read to its end.
 *
 * Routes are found on disk at test time, and which zod schema each method parses its query and body with is read from
 * the route's own source (`readJson(request, x)`, `x.parse(query)`), so a new route or a new field is fuzzed without
 * touching this file. BASELINES only adds valid examples, so mutations reach past validation into the domain code and
 * SQL. Deterministic: the values are fixed lists, and what is picked at random comes from a generator seeded per route.
 *
 * FUZZ_TRACE=<file> appends each case to the file before it is sent: the last line names a case that hangs the process.
 */

// Thousands of changes from one caller: tests/setup-env.ts raises the per-caller limits that would answer most of them
// 429 before they reach anything.

const ROOT = path.resolve(import.meta.dirname, '../..')
const API_DIR = path.join(ROOT, 'app/api')
const BASE = 'http://lazarus.test'
/** A hostile request must be answered, not left hanging. */
const CALL_TIMEOUT_MS = 10_000
/**
 * Only a backstop: every call has its own bound (CALL_TIMEOUT_MS), and a route's hundreds of calls share two busy cores
 * with the browser tests in `npm test` (POST /api/replays once took over 120 s there, where alone it takes seconds).
 */
const ROUTE_TIMEOUT_MS = 15 * 60_000

// ---------------------------------------------------------------------------------------------- deterministic chance

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const seedOf = (text: string) => [...text].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261)
const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]

// ---------------------------------------------------------------------------------------------------- hostile values

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url')

/** Strings for path params, query params and JSON string fields. */
const HOSTILE_STRINGS: string[] = [
  '', ' ', '\u0000', 'a\u0000b', '%00', '\r\nX-Injected: 1', 'line\nbreak', '\t',
  'x'.repeat(10_240), 'é'.repeat(6_000), 'Ünïcødé Ω 中文 ✓', '🐇💥👩‍👩‍👧', '\ud800', '\u202eevil', '\uffff',
  // Emoji after an odd prefix: cutting it to any even length leaves half a surrogate pair.
  `a${'🐇'.repeat(300)}`,
  '__proto__', 'constructor', 'toString',
  '-1', '0', '00', '1.5', '1e309', '0x10', 'NaN', 'Infinity', '-9223372036854775809', '9223372036854775807',
  '9223372036854775808', '9999999999999999999', '99999999999999999999', '1'.repeat(64),
  // Impossible and out-of-range dates: JavaScript rolls or accepts them, PostgreSQL refuses them.
  '2026-02-30', '2026-02-30T10:00:00Z', '0000-01-01', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59-05:00', '2026-11-30T24:00:00Z', '275760-09-13', '1',
  // Forged cursors: base64url of what each list's decoder splits on '|'.
  'MXw1', b64('2026-02-30T00:00:00Z|1'), b64('0000-01-01T00:00:00Z|1'), b64('2026-01-01T00:00:00Z|99999999999999999999'),
  b64('2026-01-01T00:00:00Z|9223372036854775808'), b64('2026-01-01T00:00:00.000Z|-1'), b64('|'), b64('a|b|c'), b64('\u0000|1'), '!!!', '====',
  "' OR 1=1 --", '%', '_', '\\', '*', '../../etc/passwd', '<script>alert(1)</script>',
]

/** What query names a route's schema does not declare get (most such routes read no query at all). */
const CORE_STRINGS = ['\u0000', '\r\nX-Injected: 1', 'x'.repeat(10_240), '\ud800', `a${'🐇'.repeat(300)}`, '99999999999999999999', '9223372036854775808', '2026-02-30', 'MXw1']

/** Non-string JSON values for body fields. */
const HOSTILE_JSON: unknown[] = [
  null, true, false, 0, -1, 1.5, -0.000001, 1e308, -1e308, 9007199254740993, 18446744073709551616, 99999999999999999999,
  [], [''], ['\u0000'], [1, 2], [null], [[[]]], {}, { a: 1 }, { '\u0000': 1 }, JSON.parse('{"__proto__":{"polluted":true}}'),
  JSON.parse('{"constructor":{"prototype":{"polluted":true}}}'), nested(64),
]

/** Objects and arrays `depth` levels deep (one child each: JSON of a wider tree would double with every level). */
function nested(depth: number): unknown {
  let value: unknown = 'deep'
  for (let i = 0; i < depth; i++) value = i % 2 ? { a: value } : [value]
  return value
}

/** Whole bodies: invalid JSON, wrong content types, empty ones, valid JSON of the wrong shape. */
const RAW_BODIES: { name: string; body?: BodyInit; headers?: Record<string, string> }[] = [
  { name: 'no body' },
  { name: 'empty JSON body', body: '', headers: { 'content-type': 'application/json' } },
  { name: 'truncated JSON', body: '{"a":', headers: { 'content-type': 'application/json' } },
  { name: 'JSON null', body: 'null', headers: { 'content-type': 'application/json' } },
  { name: 'JSON array', body: '[]', headers: { 'content-type': 'application/json' } },
  { name: 'JSON string', body: '"x"', headers: { 'content-type': 'application/json' } },
  { name: 'JSON number', body: '1e999', headers: { 'content-type': 'application/json' } },
  { name: 'JSON with a NUL escape', body: '{"\\u0000":"\\u0000"}', headers: { 'content-type': 'application/json' } },
  { name: 'JSON __proto__', body: '{"__proto__":{"polluted":true}}', headers: { 'content-type': 'application/json' } },
  { name: 'deeply nested JSON', body: '['.repeat(100_000) + ']'.repeat(100_000), headers: { 'content-type': 'application/json' } },
  { name: 'raw NUL byte', body: new Uint8Array([0x7b, 0x00, 0x7d]), headers: { 'content-type': 'application/json' } },
  { name: 'invalid UTF-8', body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), headers: { 'content-type': 'application/json' } },
  { name: 'UTF-8 byte order mark', body: '\ufeff{}', headers: { 'content-type': 'application/json' } },
  { name: 'text/plain', body: 'hello', headers: { 'content-type': 'text/plain' } },
  { name: 'form encoded', body: 'a=1&b=%00', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
  { name: 'multipart', body: '--x\r\ncontent-disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n', headers: { 'content-type': 'multipart/form-data; boundary=x' } },
  { name: '1 MiB of JSON', body: JSON.stringify({ a: 'x'.repeat(1 << 20) }), headers: { 'content-type': 'application/json' } },
  { name: 'hostile actor header', body: '{}', headers: { 'content-type': 'application/json', 'x-lazarus-user': 'ÿ\t'.repeat(4_000) } },
]

// ------------------------------------------------------------------------------------------------ discovering routes

type Schema = { _zod: { def: Record<string, unknown> & { type: string } } }
type RouteInfo = {
  /** `/api/messages/[id]/body` */
  pattern: string
  module: RouteModule
  paramNames: string[]
  query: Partial<Record<HttpMethod, Schema>>
  body: Partial<Record<HttpMethod, Schema>>
  /** Schema names the source uses that could not be resolved to a zod schema (the route is then fuzzed blind). */
  unresolved: string[]
  /** Methods whose handler looks at the query string at all. */
  readsQuery: Partial<Record<HttpMethod, boolean>>
}

function routeFiles(): string[] {
  return (readdirSync(API_DIR, { recursive: true }) as string[])
    .filter((file) => path.basename(file) === 'route.ts')
    .map((file) => file.split(path.sep).join('/'))
    .sort()
}

/**
 * The schemas a route parses its query and body with, read from its source: each `export const METHOD = …` block's
 * `readJson(request, x)` and `x.parse(query)`, with `x` resolved through its imports.
 */
async function schemasOf(file: string): Promise<Pick<RouteInfo, 'query' | 'body' | 'unresolved' | 'readsQuery'>> {
  const source = readFileSync(path.join(API_DIR, file), 'utf8')
  const imported = new Map<string, string>()
  for (const m of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
    for (const name of m[1].split(',').map((n) => n.trim().split(/\s+as\s+/).pop()!).filter(Boolean)) imported.set(name, m[2])
  }
  const resolve = async (name: string): Promise<Schema | undefined> => {
    const from = imported.get(name)
    if (!from) return undefined
    const exported = (await import(/* @vite-ignore */ from)) as Record<string, unknown>
    const schema = exported[name] as Schema | undefined
    return schema?._zod ? schema : undefined
  }
  const query: RouteInfo['query'] = {}
  const body: RouteInfo['body'] = {}
  const unresolved: string[] = []
  const readsQuery: RouteInfo['readsQuery'] = {}
  const blocks = source.split(/(?=export\s+const\s+(?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)\b)/)
  for (const block of blocks) {
    const method = /^export\s+const\s+(\w+)/.exec(block)?.[1] as HttpMethod | undefined
    if (!method) continue
    const bodyName = /readJson\(\s*\w+\s*,\s*(\w+)\s*\)/.exec(block)?.[1]
    const queryName = /(\w+)\.parse\(\s*query\b/.exec(block)?.[1]
    if (bodyName) body[method] = await resolve(bodyName)
    if (queryName) query[method] = await resolve(queryName)
    if (bodyName && !body[method]) unresolved.push(bodyName)
    if (queryName && !query[method]) unresolved.push(queryName)
    readsQuery[method] = /\bquery\b|searchParams|request\.url|new URL\(/.test(block)
  }
  return { query, body, unresolved, readsQuery }
}

const unwrapTypes = new Set(['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional', 'success'])

/** The object schemas a value at `segments` inside `schema` may be checked against (through wrappers, pipes and unions). */
function schemasAt(schema: Schema, segments: (string | number)[]): Schema[] {
  const def = schema._zod.def
  if (unwrapTypes.has(def.type)) return schemasAt(def.innerType as Schema, segments)
  if (def.type === 'pipe') return [...schemasAt(def.in as Schema, segments), ...schemasAt(def.out as Schema, segments)]
  if (def.type === 'lazy') return schemasAt((def.getter as () => Schema)(), segments)
  if (def.type === 'union') return (def.options as Schema[]).flatMap((o) => schemasAt(o, segments))
  if (def.type === 'intersection') return [...schemasAt(def.left as Schema, segments), ...schemasAt(def.right as Schema, segments)]
  if (segments.length === 0) return [schema]
  const [head, ...rest] = segments
  if (def.type === 'object') {
    const child = (def.shape as Record<string, Schema>)[String(head)]
    return child ? schemasAt(child, rest) : []
  }
  if (def.type === 'array' && typeof head === 'number') return schemasAt(def.element as Schema, rest)
  if (def.type === 'record') return schemasAt(def.valueType as Schema, rest)
  return []
}

/** Field names an object at `segments` of `schema` accepts. */
function keysAt(schema: Schema | undefined, segments: (string | number)[] = []): string[] {
  if (!schema) return []
  const keys = schemasAt(schema, segments).flatMap((s) => (s._zod.def.type === 'object' ? Object.keys(s._zod.def.shape as object) : []))
  return [...new Set(keys)]
}

// ---------------------------------------------------------------------------------------------------- the test bed

type Fixture = {
  userId: string
  sourceId: string
  groupId: string
  messageId: string
  replayId: string
  pauseId: string
  ruleId: string
  webhookId: string
  /** Messages whose stored content type (or encoding) holds CRLF or characters above U+00FF. */
  oddContentTypeIds: string[]
}

/**
 * Valid examples per route, so a mutation of one field reaches past validation (the other fields being fine).
 * Path params default to a valid id nothing has. DELETE runs last in its route, so deleting a listed id is fine.
 */
type Baseline = { params?: (f: Fixture) => RouteParams[]; query?: (f: Fixture) => Record<string, string>[]; body?: Partial<Record<HttpMethod, (f: Fixture) => unknown[]>> }

/** A valid id nothing has. */
const UNKNOWN_ID = '987654321'

/** Query names tried on a route whose query schema could not be found. */
const GENERIC_QUERY = ['id', 'cursor', 'limit', 'q', 'from', 'to', 'status', 'format', 'code', 'state', 'error']

/** Replaced by a number unique to each call, in bodies: fields that must be unique (an e-mail) then reach the insert. */
const UNIQUE = '__N__'

const filter = (f: Fixture) => ({
  group: f.groupId, source: f.sourceId, status: 'dead', failureKind: 'exhausted', service: 'orders', serviceVersion: '1.5.0',
  entity: 'order-1', q: 'stock', from: '2026-01-01', to: '2030-01-01T00:00:00Z',
})

const BASELINES: Record<string, Baseline> = {
  '/api/alerts/events': { query: () => [{ cursor: '5', limit: '10' }] },
  '/api/alerts/rules': {
    body: {
      POST: (f) => [
        { kind: 'source-rate', sourceId: f.sourceId, thresholdPerMinute: 10, windowMinutes: 5, cooldownMinutes: 30 },
        { kind: 'group-rate', groupId: f.groupId, thresholdPerMinute: 10, windowMinutes: 5, cooldownMinutes: 30 },
        { kind: 'new-group' },
      ],
    },
  },
  '/api/alerts/rules/[id]': { params: (f) => [{ id: f.ruleId }], body: { PATCH: () => [{ enabled: true }] } },
  // An address literal: webhook URLs are resolved when saved, and the tests have no DNS.
  '/api/alerts/webhooks': { body: { POST: () => [{ url: 'https://93.184.215.14/lazarus' }] } },
  '/api/alerts/webhooks/[id]': { params: (f) => [{ id: f.webhookId }] },
  '/api/auth/set-password': { body: { POST: () => [{ token: 't'.repeat(32), password: 'correct horse battery staple' }] } },
  '/api/auth/setup': { body: { POST: () => [{ token: 't'.repeat(32), email: `setup-${UNIQUE}@lazarus.test`, password: 'correct horse battery staple', displayName: 'Fuzz' }] } },
  '/api/auth/sign-in': { body: { POST: () => [{ email: 'fuzz@lazarus.test', password: 'correct horse battery staple' }] } },
  '/api/audit': { query: () => [{ action: 'pause.created', subjectType: 'pause', subjectId: '1', cursor: b64('2026-01-01T00:00:00.000Z|5'), limit: '10' }] },
  '/api/export': {
    query: (f): Record<string, string>[] => [
      { format: 'jsonl', ...filter(f) },
      { format: 'csv', ids: `${f.messageId},1` },
      { format: 'md', group: f.groupId },
    ],
  },
  '/api/groups': { query: () => [{ source: 'orders.dlq', status: 'open', failureKind: 'exhausted', service: 'orders', from: '2026-01-01', to: '2030-01-01', sort: 'count', limit: '10', includeHeld: 'true' }] },
  '/api/groups/[id]': {
    params: (f) => [{ id: f.groupId }],
    query: () => [{ range: '7d' }],
    body: { PATCH: () => [{ status: 'acknowledged', note: 'looking', ticketUrl: 'https://tracker.example.com/LZ-1' }] },
  },
  '/api/groups/[id]/ticket': { params: (f) => [{ id: f.groupId }] },
  '/api/groups/[id]/traces': { params: (f) => [{ id: f.groupId }] },
  '/api/messages': { query: (f) => [{ ...filter(f), cursor: b64(`2030-01-01T00:00:00.000Z|${f.messageId}`), limit: '10' }, { q: 'stock', limit: '1' }] },
  '/api/messages/count': { query: (f) => [filter(f)] },
  '/api/messages/[id]': { params: (f) => [{ id: f.messageId }] },
  '/api/messages/[id]/body': { params: (f) => [{ id: f.messageId }, ...f.oddContentTypeIds.map((id) => ({ id }))] },
  '/api/messages/[id]/ticket': { params: (f) => [{ id: f.messageId }] },
  '/api/messages/resolve': {
    // Selections that match nothing resolvable, so every mutation meets the same data.
    body: { POST: (f) => [{ selection: { ids: ['987654321'] }, reason: 'fuzz' }, { selection: { groupId: '987654321' }, reason: 'fuzz' }, { selection: { filter: { ...filter(f), status: 'resolved' } }, reason: 'fuzz' }] },
  },
  '/api/pauses': {
    query: () => [{ status: 'all', queue: 'orders.work', vhost: '/', instance: 'host-1-abc', guardVersion: '2.1.0', registryVersion: '3' }],
    body: { POST: (f) => [{ sourceId: f.sourceId, queue: 'orders.work', entityKey: `order-${UNIQUE}`, reason: 'fuzz' }] },
  },
  '/api/pauses/[id]': { params: () => [{ id: UNKNOWN_ID }] },
  '/api/pauses/guards': { query: (f): Record<string, string>[] => [{ sourceId: f.sourceId, queue: 'orders.work' }, { sourceId: f.sourceId }] },
  '/api/replays': {
    query: () => [{ status: 'pending', cursor: b64('2030-01-01T00:00:00.000000Z|5'), limit: '10' }],
    body: {
      POST: (f) => [
        { selection: { ids: [f.messageId] }, target: { type: 'queue' }, ratePerSecond: 10, pauseEntities: false, allowFanOut: false, dryRun: true },
        { selection: { groupId: f.groupId }, target: { type: 'custom', exchange: '', routingKey: 'fuzz.work' }, dryRun: true },
        { selection: { filter: filter(f) }, target: { type: 'source' }, dryRun: true },
      ],
    },
  },
  '/api/replays/[id]': { params: (f) => [{ id: f.replayId }] },
  '/api/replays/[id]/cancel': { params: () => [{ id: UNKNOWN_ID }] },
  '/api/replays/[id]/items': { params: (f) => [{ id: f.replayId }], query: () => [{ status: 'pending', cursor: '0', limit: '10' }] },
  '/api/settings/redaction': {
    body: { PUT: () => [{ rules: [{ kind: 'key', value: '*password*', enabled: true, description: 'passwords' }, { kind: 'detector', value: 'email' }, { kind: 'pattern', value: 'secret-[0-9]+' }] }] },
  },
  '/api/settings/redaction/preview': { body: { POST: () => [{ sample: 'password=hunter2 jane@example.com', rules: [{ kind: 'pattern', value: 'hunter[0-9]', enabled: true, description: 'd' }] }] } },
  '/api/settings/replay-targets': { body: { PUT: () => [{ customTargetPatterns: ['orders.*', 'billing.retry'] }] } },
  '/api/settings/webhooks': { body: { PUT: () => [{ allowedHosts: ['hooks.internal', '10.0.0.0/8', '192.168.1.5'] }] } },
  '/api/settings/traces': { body: { PUT: () => [{ urlTemplate: 'https://tempo.example.com/trace/{traceId}?span={spanId}' }, { urlTemplate: null }] } },
  '/api/sources': {
    body: {
      POST: () => [{ vhost: '/', queue: `fuzz-${UNIQUE}.dlq`, entityKey: { kind: 'jsonPointer', pointer: '/orderId' }, orderSensitive: false, defaultTarget: { type: 'custom', exchange: 'x', routingKey: 'k' }, enabled: false, confirmNotWorkQueue: true }],
    },
  },
  '/api/sources/[id]': {
    params: (f) => [{ id: f.sourceId }],
    body: { PATCH: () => [{ entityKey: { kind: 'header', name: 'x-order' }, orderSensitive: false, defaultTarget: { type: 'queue' }, enabled: true }, { entityKey: { kind: 'property', name: 'correlationId' } }] },
  },
  '/api/tokens': {
    body: {
      POST: (f) => [
        { name: 'fuzz', role: 'viewer', sourcePattern: 'orders.*', expiresInDays: 30, userId: f.userId },
        { name: 'guard', scope: 'guard', guardQueue: 'orders.work', guardVhost: '/', userId: f.userId },
      ],
    },
  },
  '/api/users': { body: { POST: () => [{ email: `user-${UNIQUE}@lazarus.test`, displayName: 'Fuzz', roles: [{ role: 'operator', sourcePattern: 'orders.*' }] }] } },
  '/api/users/[id]': { params: (f) => [{ id: f.userId }], body: { PATCH: () => [{ displayName: 'Fuzz', roles: [{ role: 'operator', sourcePattern: null }], disabled: false }] } },
}


// ------------------------------------------------------------------------------------------------------ the checks

type Case = { name: string; method: HttpMethod; params: RouteParams; query: Record<string, string | string[]>; init?: { body?: BodyInit; headers?: Record<string, string> } }

/** Percent-encodes a path segment's UTF-8 (encodeURIComponent throws on a lone surrogate; a browser sends U+FFFD). */
const segment = (value: string) => [...Buffer.from(value, 'utf8')].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('')

function urlOf(pattern: string, params: RouteParams, query: Case['query']): string {
  const pathname = pattern.replace(/\[(?:\.\.\.)?(\w+)\]/g, (_, name: string) => [params[name]].flat().map((p) => segment(p ?? '')).join('/'))
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) for (const item of [v].flat()) search.append(k, item)
  const qs = search.toString()
  return `${BASE}${pathname}${qs ? `?${qs}` : ''}`
}

/** Why the answer is wrong, or null: a 5xx, a 4xx without the envelope, a 2xx whose body fails while it is read. */
async function problemWith(response: Response): Promise<string | null> {
  let text: string
  try {
    text = Buffer.from(await response.arrayBuffer()).toString('utf8')
  } catch (error) {
    return `${response.status} whose body failed while read: ${(error as Error).message}`
  }
  if (response.status >= 500) return `${response.status}: ${text.slice(0, 300)}`
  if (response.status >= 400) {
    let body: { error?: { code?: unknown; message?: unknown } } | undefined
    try {
      body = JSON.parse(text)
    } catch {
      return `${response.status} without a JSON body: ${text.slice(0, 200)}`
    }
    const error = body?.error
    if (typeof error?.code !== 'string' || typeof error?.message !== 'string' || Object.keys(body!).length !== 1) {
      return `${response.status} without the error envelope: ${text.slice(0, 200)}`
    }
    if (!(response.headers.get('content-type') ?? '').includes('application/json')) return `${response.status} error envelope is not served as JSON`
  }
  if (/application\/json/.test(response.headers.get('content-type') ?? '') && response.status !== 204) {
    try {
      JSON.parse(text)
    } catch {
      return `${response.status} declares JSON but is not: ${text.slice(0, 200)}`
    }
  }
  return null
}

const clip = (v: unknown) => {
  const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v))
  return s.length > 80 ? `${s.slice(0, 80)}…(${s.length})` : s
}
const shown = (v: unknown) => clip(v === OMIT ? '(omitted)' : (JSON.stringify(v) ?? String(v)))

function describeCase(c: Case): string {
  const body = c.init?.body === undefined ? '' : ` body=${typeof c.init.body === 'string' ? clip(c.init.body) : '[bytes]'}`
  return `${c.method} ${c.name} params=${clip(c.params)} query=${clip(c.query)}${body}`
}

// ---------------------------------------------------------------------------------------------------- the mutations

type Path = (string | number)[]

function setAt(value: unknown, at: Path, replacement: unknown | typeof OMIT): unknown {
  if (at.length === 0) return replacement
  const [head, ...rest] = at
  const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) }
  if (rest.length === 0 && replacement === OMIT) {
    if (Array.isArray(copy)) copy.splice(head as number, 1)
    else delete copy[head]
    return copy
  }
  // defineProperty, so a field named __proto__ becomes an own property as JSON.parse would make it.
  Object.defineProperty(copy, head, { value: setAt(copy[head], rest, replacement), enumerable: true, writable: true, configurable: true })
  return copy
}
const OMIT = Symbol('omit')

/** Every position in `value` worth mutating: each object field and array element, plus the schema's fields it lacks. */
function pathsOf(value: unknown, schema: Schema | undefined, at: Path = []): Path[] {
  const paths: Path[] = []
  if (Array.isArray(value)) {
    value.forEach((item, i) => paths.push([...at, i], ...pathsOf(item, schema, [...at, i]).filter((p) => p.length > at.length + 1)))
    paths.push([...at, value.length])
  } else if (value && typeof value === 'object') {
    const keys = new Set([...Object.keys(value), ...keysAt(schema, at)])
    for (const key of keys) {
      paths.push([...at, key])
      paths.push(...pathsOf((value as Record<string, unknown>)[key], schema, [...at, key]).filter((p) => p.length > at.length + 1))
    }
  }
  return paths
}

let serial = 0

function casesFor(route: RouteInfo, method: HttpMethod, fixture: Fixture): Case[] {
  const random = mulberry32(seedOf(`${route.pattern} ${method}`))
  const baseline = BASELINES[route.pattern] ?? {}
  const paramSets = baseline.params?.(fixture) ?? [Object.fromEntries(route.paramNames.map((n) => [n, UNKNOWN_ID]))]
  const params = paramSets[0]
  const querySchema = route.query[method]
  const bodySchema = route.body[method]
  const queries = querySchema ? (baseline.query?.(fixture) ?? [{}]) : [{}]
  const hasBody = !['GET', 'HEAD'].includes(method)
  const bodies = hasBody ? (baseline.body?.[method]?.(fixture) ?? [{}]) : []
  const json = (body: unknown) => ({ body: JSON.stringify(body).replaceAll(UNIQUE, () => String(++serial)), headers: { 'content-type': 'application/json' } })
  const init = hasBody ? json(bodies[0]) : undefined
  const cases: Case[] = []
  const add = (name: string, c: Partial<Case>) => cases.push({ name, method, params, query: queries[0], init, ...c })

  for (const set of paramSets) add('baseline', { params: set })
  for (const name of route.paramNames) for (const value of HOSTILE_STRINGS) add(`param ${name} = ${shown(value)}`, { params: { ...params, [name]: value } })

  const queryNames = querySchema ? keysAt(querySchema) : GENERIC_QUERY
  // Without a schema the names are guesses: the core values keep those routes quick.
  const queryValues = querySchema ? HOSTILE_STRINGS : CORE_STRINGS
  if (!querySchema && !route.readsQuery[method]) {
    // The handler never looks at its query string: one case per core value, under every guessed name at once.
    for (const value of queryValues) add(`every query = ${shown(value)}`, { query: Object.fromEntries(GENERIC_QUERY.map((name) => [name, value])) })
  } else {
    for (const query of queries) {
      add('baseline query', { query })
      for (const name of [...queryNames, '__proto__', 'constructor']) {
        for (const value of queryValues) add(`query ${name} = ${shown(value)}`, { query: { ...query, [name]: value } })
        add(`query ${name} repeated`, { query: { ...query, [name]: ['1', '2'] } })
      }
    }
  }

  for (const body of bodies) {
    add('baseline body', { init: json(body) })
    for (const at of pathsOf(body, bodySchema)) {
      for (const value of [...HOSTILE_STRINGS, ...HOSTILE_JSON]) add(`body ${at.join('.')} = ${shown(value)}`, { init: json(setAt(body, at, value)) })
      add(`body ${at.join('.')} omitted`, { init: json(setAt(body, at, OMIT)) })
    }
    // A few mutations at once, seeded: fields that pass alone may not pass together.
    const paths = pathsOf(body, bodySchema)
    for (let i = 0; i < 30 && paths.length > 1; i++) {
      let mutated = body
      for (let j = 0; j < 3; j++) mutated = setAt(mutated, pick(random, paths), pick(random, [...HOSTILE_STRINGS, ...HOSTILE_JSON]))
      add('body, several fields', { init: json(mutated) })
    }
  }
  if (hasBody) for (const raw of RAW_BODIES) add(`raw body: ${raw.name}`, { init: { body: raw.body, headers: raw.headers } })
  return cases
}

// ----------------------------------------------------------------------------------------------------------- the run

const routes: RouteInfo[] = []
for (const file of routeFiles()) {
  const dir = path.dirname(file)
  routes.push({
    pattern: `/api/${dir === '.' ? '' : dir}`.replace(/\/$/, ''),
    module: (await import(/* @vite-ignore */ `@/app/api/${file.replace(/\.ts$/, '')}`)) as RouteModule,
    paramNames: [...dir.matchAll(/\[(?:\.\.\.)?(\w+)\]/g)].map((m) => m[1]),
    ...(await schemasOf(file)),
  })
}

describe('API fuzz: hostile input never gives a 5xx', () => {
  let db: TestDb
  const fixture = {} as Fixture

  beforeAll(async () => {
    // The fixture's failed queue exists on the broker (a replay plan to a missing queue is refused). It expires by
    // itself once unused, so no run leaves it behind; nothing publishes to it here.
    const connection = await brokerConnection()
    await (await connection.createChannel()).assertQueue('orders.work', { durable: false, arguments: { 'x-expires': 600_000 } })
    await connection.close()
    db = await createTestDb()
    const route = (pattern: string) => routes.find((r) => r.pattern === pattern)!.module
    const post = (pattern: string, body: unknown) =>
      callRoute(route(pattern), 'POST', new Request(BASE + pattern, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }))
    const created = async (response: Promise<Response>) => {
      const r = await response
      const body = await r.json()
      expect(r.status, JSON.stringify(body)).toBeLessThan(300)
      return body
    }
    fixture.userId = (await created(post('/api/users', { email: 'fuzz@lazarus.test', roles: [{ role: 'operator' }] }))).user.id
    // confirmNotWorkQueue: the queue is not declared on the broker, and need not be for what is fuzzed here.
    fixture.sourceId = (await created(post('/api/sources', { queue: 'orders.dlq', confirmNotWorkQueue: true }))).id
    await storeBatch({
      sql: db.sql,
      sourceId: fixture.sourceId,
      sourceLabel: 'orders.dlq',
      rows: [
        ingestRow({ errorMessage: 'SKU 1 out of stock', entityKey: 'order-1', service: 'orders', serviceVersion: '1.5.0', originQueue: 'orders.work', originExchange: '', originRoutingKeys: ['orders.work'], failedAt: new Date('2026-11-01T10:00:00Z') }),
        ingestRow({ errorMessage: 'SKU 2 out of stock', entityKey: 'order-2', originQueue: 'orders.work', propertiesJson: JSON.stringify({ contentType: 'text/plain\r\nX-Injected: 1' }), failedAt: new Date('2026-11-01T11:00:00Z') }),
        ingestRow({ errorMessage: 'SKU 3 out of stock', entityKey: 'order-3', originQueue: 'orders.work', propertiesJson: JSON.stringify({ contentType: 'text/plain; charset=ünï中', contentEncoding: 'gzip\r\n' }), failedAt: new Date('2026-11-01T12:00:00Z') }),
      ],
    })
    const { rows } = await db.sql.query<{ id: string; group_id: string }>('SELECT id::text, group_id::text FROM dead_letters ORDER BY id')
    fixture.messageId = rows[0].id
    fixture.oddContentTypeIds = [rows[1].id, rows[2].id]
    fixture.groupId = rows[0].group_id
    fixture.replayId = (await created(post('/api/replays', { selection: { ids: [rows[1].id] }, target: { type: 'queue' }, pauseEntities: false }))).id
    fixture.pauseId = (await created(post('/api/pauses', { sourceId: fixture.sourceId, queue: 'orders.work', entityKey: 'order-3', reason: 'fixture' }))).id
    fixture.ruleId = (await created(post('/api/alerts/rules', { kind: 'new-group' }))).id
    fixture.webhookId = (await created(post('/api/alerts/webhooks', { url: 'https://93.184.215.14/fixture' }))).id
  })
  afterAll(async () => db?.drop())

  it('finds the routes and the schemas they parse', () => {
    expect(routes.length).toBeGreaterThan(20)
    expect(routes.filter((r) => r.unresolved.length > 0).map((r) => `${r.pattern}: ${r.unresolved.join(', ')}`)).toEqual([])
    expect(routes.find((r) => r.pattern === '/api/messages')?.query.GET).toBeDefined()
    expect(routes.find((r) => r.pattern === '/api/replays')?.body.POST).toBeDefined()
    expect(keysAt(routes.find((r) => r.pattern === '/api/export')!.query.GET)).toEqual(expect.arrayContaining(['format', 'ids', 'q', 'group', 'from']))
  })

  for (const route of routes) {
    // DELETE last: it may remove what the route's other methods use.
    const methods = methodsOf(route.module).sort((a, b) => Number(a === 'DELETE') - Number(b === 'DELETE'))
    for (const method of methods) {
      it(`${method} ${route.pattern}`, async () => {
        const failures: string[] = []
        for (const c of casesFor(route, method, fixture)) {
          let problem: string | null
          let timer: NodeJS.Timeout | undefined
          if (process.env.FUZZ_TRACE) appendFileSync(process.env.FUZZ_TRACE, `${describeCase(c)}\n`)
          try {
            const call = callRoute(route.module, method, new Request(urlOf(route.pattern, c.params, c.query), { method, ...c.init }), c.params).then(problemWith)
            // A call that fails after it was given up on must not become an unhandled rejection.
            call.catch(() => {})
            const hung = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${CALL_TIMEOUT_MS} ms`), CALL_TIMEOUT_MS)))
            problem = await Promise.race([call, hung])
          } catch (error) {
            problem = `threw: ${(error as Error).stack?.split('\n').slice(0, 3).join(' ')}`
          } finally {
            clearTimeout(timer)
          }
          if (problem) failures.push(`${describeCase(c)}\n    → ${problem}`)
        }
        if (({} as Record<string, unknown>).polluted !== undefined) failures.push('Object.prototype was polluted')
        // A count, not toEqual([]): diffing thousands of long strings takes vitest minutes.
        expect(failures.length, `${failures.length} failures:\n${failures.slice(0, 25).join('\n')}`).toBe(0)
      }, ROUTE_TIMEOUT_MS)
    }
  }
})
