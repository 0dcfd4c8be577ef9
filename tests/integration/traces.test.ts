import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as exportRoute from '@/app/api/export/route'
import * as groupTracesRoute from '@/app/api/groups/[id]/traces/route'
import * as countRoute from '@/app/api/messages/count/route'
import * as messagesRoute from '@/app/api/messages/route'
import * as replaysRoute from '@/app/api/replays/route'
import * as traceSettingsRoute from '@/app/api/settings/traces/route'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { getMessage } from '@/lib/server/messages/get-message'
import type { ChannelModel, Channel, ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import { composition } from '@/lib/server/platform/process/composition'
import { createReplay } from '@/lib/server/replay/create-replay'
import { getTraceSettings, updateTraceSettings } from '@/lib/server/traces/trace-settings'
import { parseTraceparent } from '@/lib/server/traces/trace-context'
import type { MessageCountDto, MessageListDto } from '@/lib/shared/schemas/message'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import type { GroupTracesDto, TraceSettingsDto } from '@/lib/shared/schemas/trace-settings'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { createTestUser } from '../helpers/auth'
import { callRoute } from '../helpers/call-route'
import { drainQueues } from '../helpers/drainer'
import { collect, deadLetterThrough, declareWorkTopology, deleteWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'

/*
 * Traces end to end (docs/ARCHITECTURE.md#traces): dead letters with W3C and B3 trace headers go through RabbitMQ and
 * the drainer, their ids are filtered by and linked to, and replays of them arrive in the work queue with the trace
 * kept, or a new one started.
 */

const BASE = 'http://lazarus.test'
const TRACE_A = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN_A = '00f067aa0ba902b7'
const B3_TRACE_64 = 'a3ce929d0e0e4736'
const TRACE_B = `0000000000000000${B3_TRACE_64}`
const SPAN_B = 'e457b5a2e4d86bd1'
const TRACEPARENT_A = `00-${TRACE_A}-${SPAN_A}-01`

const get = async <T>(module: Parameters<typeof callRoute>[0], path: string, params: Record<string, string> = {}) => {
  const response = await callRoute(module, 'GET', new Request(`${BASE}${path}`), params)
  expect(response.status, path).toBe(200)
  return (await response.json()) as T
}
const send = (module: Parameters<typeof callRoute>[0], method: 'POST' | 'PUT', path: string, body: unknown) =>
  callRoute(module, method, new Request(`${BASE}${path}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }))

const headerText = (message: ConsumeMessage, name: string) => {
  const value = message.properties.headers?.[name] as unknown
  return Buffer.isBuffer(value) ? value.toString('utf8') : (value as string | undefined)
}

describe('traces', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  let executor: ReplayExecutor
  const names = { exchange: uniqueName('trace_x'), key: 'order.placed', work: uniqueName('trace_work'), dlq: uniqueName('trace_dlq') }
  const ids: Record<string, string> = {}
  let groupId: string

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    const message = (messageId: string, headers: Record<string, string>) => ({ body: Buffer.from(JSON.stringify({ messageId })), options: { messageId, contentType: 'application/json', headers: { 'x-error-type': 'TraceTest', ...headers } } })
    await deadLetterThrough(connection, {
      ...names,
      messages: [
        message('w3c-1', { traceparent: TRACEPARENT_A, tracestate: 'vendor=1' }),
        message('b3', { b3: `${B3_TRACE_64}-${SPAN_B}-1`, 'X-B3-Sampled': '1' }),
        message('none', {}),
        message('w3c-2', { Traceparent: `00-${TRACE_A}-${'1'.repeat(16)}-01` }),
        message('bad', { traceparent: `00-${'0'.repeat(32)}-${SPAN_A}-01` }),
      ],
    })
    ;({ drainer } = await drainQueues(db, [names.dlq]))
    await waitFor(async () => (await db.sql.query('SELECT 1 FROM dead_letters')).rows.length === 5, { what: '5 dead letters stored' })
    const { rows } = await db.sql.query<{ id: string; message_id: string; group_id: string }>(`SELECT id::text, properties->>'messageId' AS message_id, group_id::text FROM dead_letters`)
    for (const row of rows) ids[row.message_id] = row.id
    groupId = rows[0].group_id
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await deleteWorkTopology(channel, names)
    await connection?.close()
    await db?.drop()
  })

  it('stores the trace and span ids the headers carry at ingest, and none for an invalid or missing header', async () => {
    expect(new Set((await db.sql.query<{ group_id: string }>('SELECT group_id::text FROM dead_letters')).rows.map((r) => r.group_id))).toEqual(new Set([groupId]))
    const { rows } = await db.sql.query<{ message_id: string; trace_id: string | null; span_id: string | null }>(
      `SELECT properties->>'messageId' AS message_id, trace_id, span_id FROM dead_letters ORDER BY properties->>'messageId'`,
    )
    expect(rows).toEqual([
      { message_id: 'b3', trace_id: TRACE_B, span_id: SPAN_B },
      { message_id: 'bad', trace_id: null, span_id: null },
      { message_id: 'none', trace_id: null, span_id: null },
      { message_id: 'w3c-1', trace_id: TRACE_A, span_id: SPAN_A },
      { message_id: 'w3c-2', trace_id: TRACE_A, span_id: '1'.repeat(16) },
    ])
  })

  it('filters by traceId in the list, the count, an export and a replay plan, a 64-bit id as its 16 characters', async () => {
    const list = await get<MessageListDto>(messagesRoute, `/api/messages?traceId=${TRACE_A.toUpperCase()}`)
    expect(list.messages.map((m) => m.id).sort()).toEqual([ids['w3c-1'], ids['w3c-2']].sort())
    expect(await get<MessageCountDto>(countRoute, `/api/messages/count?traceId=${TRACE_A}`)).toMatchObject({ count: 2 })
    expect((await get<MessageListDto>(messagesRoute, `/api/messages?traceId=${B3_TRACE_64}`)).messages.map((m) => m.id)).toEqual([ids.b3])
    const exported = await callRoute(exportRoute, 'GET', new Request(`${BASE}/api/export?format=jsonl&traceId=${TRACE_A}`))
    expect(exported.status).toBe(200)
    expect((await exported.text()).trim().split('\n')).toHaveLength(2)
    const dryRun = await send(replaysRoute, 'POST', '/api/replays', { selection: { filter: { traceId: TRACE_A } }, dryRun: true })
    expect(dryRun.status).toBe(200)
    expect(((await dryRun.json()) as ReplayDryRunDto).plan).toMatchObject({ matched: 2 })
    const bad = await callRoute(messagesRoute, 'GET', new Request(`${BASE}/api/messages?traceId=not-a-trace`))
    expect(bad.status).toBeGreaterThanOrEqual(400)
    expect(bad.status).toBeLessThan(500)
  })

  it('links a trace with the stored template, which wins over the environment’s; the change is audited', async () => {
    const refused = await send(traceSettingsRoute, 'PUT', '/api/settings/traces', { urlTemplate: 'javascript:alert(1)//{traceId}' })
    expect(refused.status).toBeGreaterThanOrEqual(400)
    expect(refused.status).toBeLessThan(500)
    expect((await getMessage({ db, id: ids['w3c-1'] })).trace).toEqual({ traceId: TRACE_A, spanId: SPAN_A, url: null })

    const saved = await send(traceSettingsRoute, 'PUT', '/api/settings/traces', { urlTemplate: 'https://tempo.example/trace/{traceId}?span={spanId}' })
    expect(saved.status).toBe(200)
    expect(((await saved.json()) as TraceSettingsDto).effectiveTemplate).toBe('https://tempo.example/trace/{traceId}?span={spanId}')
    expect((await getMessage({ db, id: ids['w3c-1'] })).trace?.url).toBe(`https://tempo.example/trace/${TRACE_A}?span=${SPAN_A}`)
    const environment = { LAZARUS_TRACE_URL_TEMPLATE: 'https://jaeger.example/trace/{traceId}' }
    expect(await getTraceSettings({ db, config: environment })).toMatchObject({ effectiveTemplate: 'https://tempo.example/trace/{traceId}?span={spanId}', environmentTemplate: environment.LAZARUS_TRACE_URL_TEMPLATE })
    // Cleared: the environment's applies again.
    expect(await updateTraceSettings({ db, input: { urlTemplate: null }, actor: 'admin', config: environment })).toMatchObject({ urlTemplate: null, effectiveTemplate: environment.LAZARUS_TRACE_URL_TEMPLATE })
    const { rows: audit } = await db.sql.query<{ summary: string }>(`SELECT summary FROM audit_log WHERE subject_type = 'settings' AND subject_id = 'traces' ORDER BY id`)
    expect(audit.map((a) => a.summary)).toEqual(['Changed the trace link template', 'Cleared the trace link template'])
    expect((await get<TraceSettingsDto>(traceSettingsRoute, '/api/settings/traces')).urlTemplate).toBeNull()
  })

  it("lists a group's most recent distinct traces, each with its newest message", async () => {
    await updateTraceSettings({ db, input: { urlTemplate: 'https://tempo.example/trace/{traceId}' }, actor: 'admin' })
    const { traces, scanned } = await get<GroupTracesDto>(groupTracesRoute, `/api/groups/${groupId}/traces`, { id: groupId })
    expect(scanned).toBe(5)
    expect(traces.map((t) => t.traceId).sort()).toEqual([TRACE_A, TRACE_B].sort())
    const a = traces.find((t) => t.traceId === TRACE_A)!
    expect([ids['w3c-1'], ids['w3c-2']]).toContain(a.messageId)
    expect(a.url).toBe(`https://tempo.example/trace/${TRACE_A}`)
    const missing = await callRoute(groupTracesRoute, 'GET', new Request(`${BASE}/api/groups/999999999/traces`), { id: '999999999' })
    expect(missing.status).toBe(404)
    // A viewer of other sources finds the group as missing as one that does not exist, as on the group's page.
    const elsewhere = await createTestUser(db, 'traces-elsewhere', [{ role: 'viewer', sourcePattern: 'elsewhere.*' }])
    const hidden = await callRoute(groupTracesRoute, 'GET', new Request(`${BASE}/api/groups/${groupId}/traces`, { headers: { authorization: elsewhere.authorization } }), { id: groupId }, { anonymous: true })
    expect(hidden.status).toBe(404)
  })

  it('reads the trace of a message stored before ingest read them from its headers when shown', async () => {
    await db.sql.query('UPDATE dead_letters SET trace_id = NULL, span_id = NULL WHERE id = $1::bigint', [ids.b3])
    expect((await getMessage({ db, id: ids.b3 })).trace).toMatchObject({ traceId: TRACE_B, spanId: SPAN_B })
    const { traces } = await get<GroupTracesDto>(groupTracesRoute, `/api/groups/${groupId}/traces`, { id: groupId })
    expect(traces.map((t) => t.traceId)).toContain(TRACE_B)
  })

  it('replays a copy that keeps its traceparent and names the trace it failed in', async () => {
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [ids['w3c-1']] } }, actor: 'alice' })) as ReplayCreatedDto
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 1 })
    const [copy] = await collect(connection, names.work, 1)
    expect(headerText(copy, 'traceparent')).toBe(TRACEPARENT_A)
    expect(headerText(copy, 'tracestate')).toBe('vendor=1')
    expect(headerText(copy, 'x-lazarus-origin-trace')).toBe(TRACE_A)
  })

  it('replays with newTrace: a fresh traceparent, the old trace headers dropped, the origin trace named; frozen on the job', async () => {
    const response = await send(replaysRoute, 'POST', '/api/replays', { selection: { ids: [ids.b3, ids['w3c-2']] }, newTrace: true })
    expect(response.status).toBe(201)
    const created = (await response.json()) as ReplayCreatedDto
    const { rows } = await db.sql.query<{ new_trace: boolean }>('SELECT new_trace FROM replay_jobs WHERE id = $1::bigint', [created.id])
    expect(rows[0].new_trace).toBe(true)
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 2 })
    const copies = await collect(connection, names.work, 2)
    expect(copies).toHaveLength(2)
    const byId = new Map(copies.map((c) => [c.properties.messageId as string, c]))
    const b3Copy = byId.get('b3')!
    expect(b3Copy.properties.headers?.b3).toBeUndefined()
    expect(b3Copy.properties.headers?.['X-B3-Sampled']).toBeUndefined()
    expect(headerText(b3Copy, 'x-lazarus-origin-trace')).toBe(TRACE_B)
    const w3cCopy = byId.get('w3c-2')!
    expect(w3cCopy.properties.headers?.Traceparent).toBeUndefined()
    expect(headerText(w3cCopy, 'x-lazarus-origin-trace')).toBe(TRACE_A)
    const fresh = [b3Copy, w3cCopy].map((c) => parseTraceparent(headerText(c, 'traceparent') ?? ''))
    expect(fresh.every((f) => f !== null && f.traceId !== TRACE_A && f.traceId !== TRACE_B)).toBe(true)
    expect(fresh[0]!.traceId).not.toBe(fresh[1]!.traceId)
  })
})
