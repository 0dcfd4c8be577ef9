import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as messageRoute from '@/app/api/messages/[id]/route'
import * as revisionsRoute from '@/app/api/messages/[id]/revisions/route'
import * as bulkEditRoute from '@/app/api/messages/bulk-edit/route'
import type { Drainer } from '@/lib/server/engines/drainer/drainer'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { createRevision } from '@/lib/server/messages/create-revision'
import type { Channel, ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { getTypedHeaders, withTypedHeaders, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { MessageDetailDto } from '@/lib/shared/schemas/message'
import type { ReplayCreatedDto, ReplayDryRunDto } from '@/lib/shared/schemas/replay'
import type { BulkEditResultDto, MessageRevisionsDto, RevisionCreatedDto } from '@/lib/shared/schemas/revision'
import { createTestUser, type TestUser } from '../helpers/auth'
import { brokerConnection, queueDepth, uniqueName, waitFor } from '../helpers/broker'
import { drainQueues } from '../helpers/drainer'
import { collect, deadLetterThrough, declareWorkTopology, deleteWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { b64, EVERY_BROKER_TYPE } from '../helpers/typed-headers'
import { composition } from '@/lib/server/platform/process/composition'

/*
 * Issue 18, "Edit and replay": an edit is a revision, the stored message never changes, and a replay publishes the
 * revision it froze, exactly (body bytes and typed headers), with x-lazarus-revision, and never the original as well.
 */

/** What a Java client (Spring AMQP, the RabbitMQ Java client) puts in a header table. */
const JAVA_HEADERS: TypedTable = {
  'java.long': { t: 'l', v: '-9223372036854775808' },
  'java.int': { t: 'I', v: -2147483648 },
  'java.short': { t: 's', v: 32767 },
  'java.byte': { t: 'b', v: -7 },
  'java.float': { t: 'f', v: Math.fround(2.75) },
  'java.double': { t: 'd', v: 12345.678 },
  'java.bigdecimal': { t: 'D', v: { places: 2, digits: 1999 } },
  'java.date': { t: 'T', v: '1767225600' },
  'java.boolean': { t: 't', v: false },
  'java.bytes': { t: 'x', b64: b64([0xca, 0xfe, 0xba, 0xbe]) },
  'java.map': { t: 'F', v: { tenant: { t: 'S', v: 'acme' }, shard: { t: 'I', v: 3 } } },
  'java.list': { t: 'A', v: [{ t: 'S', v: 'a' }, { t: 'l', v: '2' }, { t: 'V' }] },
  'java.null': { t: 'V' },
}

const LAZARUS_OR_BROKER = /^(x-lazarus-|x-death$|x-first-death-|x-last-death-)/

describe('edit and replay', () => {
  let db: TestDb
  let connection: ChannelModel
  let channel: Channel
  let drainer: Drainer
  let executor: ReplayExecutor
  let operator: TestUser
  let viewer: TestUser
  const names = { exchange: uniqueName('edit_x'), key: 'order.created', work: uniqueName('edit_work'), dlq: uniqueName('edit_dlq') }
  const ids: Record<string, string> = {}
  const binary = randomBytes(64)

  const request = (url: string, user: TestUser, init: RequestInit = {}) =>
    new Request(`http://lazarus.test${url}`, { ...init, headers: { authorization: user.authorization, origin: 'http://lazarus.test', ...init.headers } })
  const postRevision = (id: string, body: unknown, user = operator) =>
    revisionsRoute.POST(request(`/api/messages/${id}/revisions`, user, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), { params: Promise.resolve({ id }) })
  const getRevisions = async (id: string, user = operator) => revisionsRoute.GET(request(`/api/messages/${id}/revisions`, user), { params: Promise.resolve({ id }) })
  const bulkEdit = (body: unknown, user = operator) =>
    bulkEditRoute.POST(request('/api/messages/bulk-edit', user, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }), { params: Promise.resolve({}) })
  const headerList = (table: TypedTable) => Object.entries(table).map(([name, value]) => ({ name, value }))
  const userHeaders = (table: TypedTable) => Object.fromEntries(Object.entries(table).filter(([k]) => !LAZARUS_OR_BROKER.test(k)))

  beforeAll(async () => {
    db = await createTestDb()
    operator = await createTestUser(db, 'edit-operator', [{ role: 'operator' }])
    viewer = await createTestUser(db, 'edit-viewer', [{ role: 'viewer' }])
    connection = await brokerConnection()
    channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    const json = (messageId: string, value: unknown, headers: TypedTable = {}) => ({
      body: Buffer.from(JSON.stringify(value)),
      options: { messageId, contentType: 'application/json', headers: withTypedHeaders({ ...EVERY_BROKER_TYPE, ...headers }) },
    })
    await deadLetterThrough(connection, {
      ...names,
      messages: [
        json('A', { orderId: 'A', amount: 'forty-two' }, { 'retry-count': { t: 'l', v: '3' }, 'x-error-type': { t: 'S', v: 'NumberFormatException' } }),
        json('B', { orderId: 'B', amount: 1 }),
        json('C', { orderId: 'C', status: 'NEW' }),
        json('D', { orderId: 'D', status: 'NEW' }),
        { body: binary, options: { messageId: 'E', contentType: 'application/x-protobuf' } },
        json('F', { orderId: 'F' }),
        json('G', { orderId: 'G' }, { tenant: { t: 'S', v: 'acme' } }),
      ],
    })
    ;({ drainer } = await drainQueues(db, [names.dlq]))
    const rows = await waitFor(async () => {
      const { rows } = await db.sql.query<{ id: string; message_id: string }>(`SELECT id::text, properties->>'messageId' AS message_id FROM dead_letters ORDER BY id`)
      return rows.length === 7 ? rows : null
    }, { what: '7 dead letters stored' })
    for (const r of rows) ids[r.message_id] = r.id
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await deleteWorkTopology(channel, names)
    await connection?.close()
    await db?.drop()
  })

  it('publishes the edited body and typed headers exactly, once, with x-lazarus-revision; the original never arrives and never changes', async () => {
    const { rows: [before] } = await db.sql.query<{ body: Buffer; headers: string; properties: unknown }>('SELECT body, headers::text, properties FROM dead_letters WHERE id = $1::bigint', [ids.A])
    const editedBody = '{\n  "orderId": "A",\n  "amount": 42\n}\n'
    // Typed headers: the original's kept (their types too), one changed from long to int, Java's whole table added.
    const original = JSON.parse(before.headers) as TypedTable
    const editedHeaders: TypedTable = { ...userHeaders(original), 'retry-count': { t: 'I', v: 0 }, ...JAVA_HEADERS }
    delete editedHeaders['x-error-type']

    const response = await postRevision(ids.A, { body: { kind: 'json', text: editedBody }, headers: headerList(editedHeaders), properties: { type: 'order.fixed' }, basedOn: 0 })
    expect(response.status).toBe(201)
    const { revision } = (await response.json()) as RevisionCreatedDto
    expect(revision).toMatchObject({ revision: 1, createdBy: operator.actor, bodyEncoding: 'json', bulkId: null })
    expect(revision.diff.body).toMatchObject({ kind: 'text', added: 4, removed: 1 })
    expect(revision.diff.headers).toEqual(
      expect.arrayContaining([
        { name: 'retry-count', change: 'changed', before: { t: 'l', v: '3' }, after: { t: 'I', v: 0 } },
        { name: 'x-error-type', change: 'removed', before: { t: 'S', v: 'NumberFormatException' } },
        { name: 'java.long', change: 'added', after: JAVA_HEADERS['java.long'] },
      ]),
    )
    expect(revision.diff.properties).toEqual([{ name: 'type', before: null, after: 'order.fixed' }])

    // Listed, with its diff, and marked as what the next replay sends.
    const listed = (await (await getRevisions(ids.A)).json()) as MessageRevisionsDto
    expect(listed.revisions).toHaveLength(1)
    expect(listed.revisions[0].diff.body).toMatchObject({ kind: 'text', patch: expect.stringContaining('+  "amount": 42') })
    expect(listed.latest).toMatchObject({ revision: 1, body: { encoding: 'json', text: editedBody } })
    // The audit entry holds the diff.
    const { rows: audit } = await db.sql.query<{ actor: string; subject_id: string; details: { revision: number; diff: { body: { patch: string }; headers: unknown[] } } }>(
      `SELECT actor, subject_id, details FROM audit_log WHERE action = 'message.edited'`,
    )
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ actor: operator.actor, subject_id: ids.A, details: { revision: 1 } })
    expect(audit[0].details.diff.body.patch).toContain('-{"orderId":"A","amount":"forty-two"}')
    expect(audit[0].details.diff.headers).toHaveLength(revision.diff.headers.length)

    const dry = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [ids.A, ids.F] }, dryRun: true }, actor: 'alice' })) as ReplayDryRunDto
    expect(dry.plan).toMatchObject({ replayable: 2, editedMessages: 1 })

    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [ids.A] } }, actor: 'alice' })) as ReplayCreatedDto
    expect(created.plan.editedMessages).toBe(1)
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', total: 1, published: 1, confirmed: 1 })
    // Confirmed means routed: the queue holds exactly the one copy.
    expect(await queueDepth(names.work)).toBe(1)
    const [received] = await collect(connection, names.work, 1)
    expect(received.content.toString('utf8')).toBe(editedBody)
    expect(received.properties).toMatchObject({ messageId: 'A', contentType: 'application/json', type: 'order.fixed' })
    const typed = getTypedHeaders(received.properties.headers) ?? {}
    expect(userHeaders(typed)).toEqual(editedHeaders)
    expect(Object.keys(userHeaders(typed))).toEqual(Object.keys(editedHeaders))
    expect(typed['x-lazarus-revision']).toEqual({ t: 'l', v: '1' })
    expect(typed['x-lazarus-origin-id']).toEqual({ t: 'S', v: ids.A })
    expect(await queueDepth(names.work)).toBe(0)

    // The stored original is untouched.
    const { rows: [after] } = await db.sql.query<{ body: Buffer; headers: string; properties: unknown }>('SELECT body, headers::text, properties FROM dead_letters WHERE id = $1::bigint', [ids.A])
    expect(after.body.equals(before.body)).toBe(true)
    expect(after.headers).toBe(before.headers)
    expect(after.properties).toEqual(before.properties)
  })

  it('a job sends the revision it froze at creation, even when the message is edited again before it runs', async () => {
    expect((await postRevision(ids.B, { body: { kind: 'json', text: '{"orderId":"B","amount":2}' } })).status).toBe(201)
    const stopped = executor
    await stopped.stop()
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids: [ids.B] } }, actor: 'alice' })) as ReplayCreatedDto
    expect((await postRevision(ids.B, { body: { kind: 'json', text: '{"orderId":"B","amount":3}' }, basedOn: 1 })).status).toBe(201)
    const listed = (await (await getRevisions(ids.B)).json()) as MessageRevisionsDto
    expect(listed.revisions.map((r) => r.revision)).toEqual([2, 1])
    expect(listed.pendingReplays).toEqual([{ jobId: created.id, revision: 1 }])
    executor = startTestExecutor(db)
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', published: 1, confirmed: 1 })
    expect(await queueDepth(names.work)).toBe(1)
    const [received] = await collect(connection, names.work, 1)
    expect(received.content.toString('utf8')).toBe('{"orderId":"B","amount":2}')
    expect(getTypedHeaders(received.properties.headers)?.['x-lazarus-revision']).toEqual({ t: 'l', v: '1' })
  })

  it('refuses bad edits with a clear 4xx: invalid JSON (422, with the parse error), a bad typed value, a body over the limit, a stale base, a viewer', async () => {
    const invalid = await postRevision(ids.F, { body: { kind: 'json', text: '{"orderId": "F",}' } })
    expect(invalid.status).toBe(422)
    const error = (await invalid.json()) as { error: { message: string; details: { parseError: string } } }
    expect(error.error.message).toMatch(/^The body is not valid JSON: /)
    expect(error.error.details.parseError.length).toBeGreaterThan(0)
    // Text with a JSON content type must parse as well.
    expect((await postRevision(ids.F, { body: { kind: 'text', text: 'not json' } })).status).toBe(422)

    const badHeader = await postRevision(ids.F, { headers: [{ name: 'n', value: { t: 'I', v: 'twelve' } }] })
    expect(badHeader.status).toBe(422)
    expect(((await badHeader.json()) as { error: { message: string } }).error.message).toMatch(/Invalid header value/)
    expect((await postRevision(ids.F, { headers: [{ name: 'n', value: { t: 's', v: 40000 } }] })).status).toBe(422)

    await expect(createRevision({ db, id: ids.F, input: { body: { kind: 'text', text: 'x'.repeat(65) } }, actor: 'alice', maxBodyBytes: 64 })).rejects.toMatchObject({ status: 413, code: 'too_large' } satisfies Partial<AppError>)
    expect((await postRevision(ids.F, { properties: { priority: 3 } })).status).toBe(201)
    expect((await postRevision(ids.F, { properties: { priority: 4 }, basedOn: 0 })).status).toBe(409)
    expect((await postRevision(ids.F, { properties: { priority: 3 } })).status).toBe(422) // changes nothing
    expect((await postRevision(ids.F, { properties: { priority: 5 } }, viewer)).status).toBe(403)
    expect((await getRevisions(ids.F, viewer)).status).toBe(403)
    expect((await postRevision('999999999', { properties: { priority: 5 } })).status).toBe(404)
    const { rows } = await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_revisions WHERE dead_letter_id = $1::bigint`, [ids.F])
    expect(rows[0].n).toBe(1)
  })

  it('takes a binary replacement as a multipart upload, larger than the 1 MiB every other request may send', async () => {
    const replacement = randomBytes(1536 * 1024)
    const form = new FormData()
    form.set('file', new Blob([replacement]), 'replacement.bin')
    form.set('edit', JSON.stringify({ basedOn: 0 }))
    const response = await revisionsRoute.POST(request(`/api/messages/${ids.E}/revisions`, operator, { method: 'POST', body: form }), { params: Promise.resolve({ id: ids.E }) })
    expect(response.status).toBe(201)
    const { revision } = (await response.json()) as RevisionCreatedDto
    expect(revision.diff.body).toMatchObject({ kind: 'binary', beforeSize: binary.length, afterSize: replacement.length })
    const listed = (await (await getRevisions(ids.E)).json()) as MessageRevisionsDto
    expect(Buffer.from(listed.latest!.body.base64, 'base64').equals(replacement)).toBe(true)
  })

  it('bulk JSON Patch: a preview with sample diffs and the count it cannot apply to, then one revision per message and one audit entry', async () => {
    const selection = { ids: [ids.C, ids.D, ids.E, ids.F] }
    const operation = { type: 'json-patch', patch: [{ op: 'test', path: '/status', value: 'NEW' }, { op: 'replace', path: '/status', value: 'RETRY' }] }
    const preview = (await (await bulkEdit({ selection, operation, preview: true })).json()) as BulkEditResultDto
    expect(preview).toMatchObject({ preview: true, matched: 4, applicable: 2, edited: 0, bulkId: null })
    expect(preview.sample.map((s) => s.id)).toEqual([ids.C, ids.D])
    expect(preview.sample[0].diff.body).toMatchObject({ kind: 'text', patch: expect.stringContaining('+{"orderId":"C","status":"RETRY"}') })
    expect(preview.notApplicable).toEqual(
      expect.arrayContaining([
        { reason: 'the body is not JSON', count: 1, sampleIds: [ids.E] },
        { reason: expect.stringMatching(/^operation 1 \(test \/status\)/), count: 1, sampleIds: [ids.F] },
      ]),
    )
    expect((await db.sql.query(`SELECT 1 FROM message_revisions WHERE dead_letter_id = ANY($1::bigint[])`, [[ids.C, ids.D]])).rows).toEqual([])
    expect((await bulkEdit({ selection, operation, preview: false }, viewer)).status).toBe(403)

    const applied = (await (await bulkEdit({ selection, operation, preview: false })).json()) as BulkEditResultDto
    expect(applied).toMatchObject({ preview: false, matched: 4, applicable: 2, edited: 2, bulkId: expect.any(String) })
    const { rows } = await db.sql.query<{ id: string; revision: number; body: Buffer; bulk_id: string }>(
      `SELECT dead_letter_id::text AS id, revision, body, bulk_id FROM message_revisions WHERE bulk_id IS NOT NULL ORDER BY dead_letter_id`,
    )
    expect(rows.map((r) => [r.id, r.revision, r.body.toString(), r.bulk_id])).toEqual([
      [ids.C, 1, '{"orderId":"C","status":"RETRY"}', applied.bulkId],
      [ids.D, 1, '{"orderId":"D","status":"RETRY"}', applied.bulkId],
    ])
    const { rows: audit } = await db.sql.query<{ details: { bulkId: string; edited: number } }>(`SELECT details FROM audit_log WHERE action = 'messages.bulk-edited'`)
    expect(audit).toEqual([{ details: expect.objectContaining({ bulkId: applied.bulkId, edited: 2 }) }])

    // Set and remove a typed header in bulk; removing one a message lacks is not applicable.
    const set = (await (await bulkEdit({ selection: { ids: [ids.C, ids.D] }, operation: { type: 'set-header', name: 'x-fixed-by', value: { t: 'l', v: '7' } }, preview: false })).json()) as BulkEditResultDto
    expect(set).toMatchObject({ edited: 2 })
    const removed = (await (await bulkEdit({ selection: { ids: [ids.C, ids.F] }, operation: { type: 'remove-header', name: 'x-fixed-by' }, preview: true })).json()) as BulkEditResultDto
    expect(removed).toMatchObject({ applicable: 1, notApplicable: [{ reason: 'no header "x-fixed-by"', count: 1, sampleIds: [ids.F] }] })
    // An invalid value is refused whatever the selection matches, none included.
    for (const selection of [{ ids: [ids.C] }, { ids: ['987654321'] }]) {
      const invalid = await bulkEdit({ selection, operation: { type: 'set-header', name: 'n', value: { t: 'B', v: 300 } }, preview: true })
      expect(invalid.status).toBe(422)
    }
  })

  it("refuses a revision that sets the broker's or Lazarus' own headers (422 naming the header, any case), and keeps them when untouched", async () => {
    // What the editor sends: every header of the message as the API shows it, with the operator's change.
    const detail = (await (await messageRoute.GET(request(`/api/messages/${ids.G}`, operator), { params: Promise.resolve({ id: ids.G }) })).json()) as MessageDetailDto
    const shown = detail.headersTyped as TypedTable
    expect(Object.keys(shown)).toEqual(expect.arrayContaining(['x-death', 'x-first-death-queue', 'x-first-death-reason', 'x-first-death-exchange', 'tenant']))
    const refusal = async (headers: TypedTable) => {
      const response = await postRevision(ids.G, { headers: headerList(headers), basedOn: 0 })
      return { status: response.status, error: ((await response.json()) as { error: { message: string; details?: { header?: string } } }).error }
    }
    const forged: [string, TypedTable[string]][] = [
      ['x-lazarus-origin-id', { t: 'S', v: '1' }],
      ['X-Lazarus-Replay-Id', { t: 'S', v: 'forged' }],
      ['x-lazarus-revision', { t: 'l', v: '9' }],
      ['x-lazarus-held-from', { t: 'S', v: 'orders' }],
      ['X-Death', { t: 'A', v: [] }],
      ['x-last-death-reason', { t: 'S', v: 'expired' }],
      ['CC', { t: 'A', v: [{ t: 'S', v: 'audit.queue' }] }],
      ['bcc', { t: 'A', v: [{ t: 'S', v: 'audit.queue' }] }],
      ['x-delivery-count', { t: 'l', v: '1' }],
    ]
    for (const [name, value] of forged) {
      const { status, error } = await refusal({ ...shown, [name]: value })
      expect([name, status, error.details?.header]).toEqual([name, 422, name])
      expect(error.message).toContain(`Header "${name}"`)
      expect(error.message).toMatch(/own and cannot be set in a revision/)
    }
    // Changing the value of one the message already has is setting it too.
    const changed = await refusal({ ...shown, 'x-first-death-reason': { t: 'S', v: 'expired' } })
    expect([changed.status, changed.error.details?.header]).toEqual([422, 'x-first-death-reason'])
    expect((await db.sql.query(`SELECT 1 FROM message_revisions WHERE dead_letter_id = $1::bigint`, [ids.G])).rows).toEqual([])

    // Kept as they are (the replay strips them), the edit goes through, and its diff names only what changed.
    const kept = await postRevision(ids.G, { headers: headerList({ ...shown, tenant: { t: 'S', v: 'globex' } }), basedOn: 0 })
    expect(kept.status).toBe(201)
    const { revision } = (await kept.json()) as RevisionCreatedDto
    expect(revision.diff.headers).toEqual([{ name: 'tenant', change: 'changed', before: { t: 'S', v: 'acme' }, after: { t: 'S', v: 'globex' } }])

    // A bulk edit may not set one either, not even in a preview; removing one stays possible.
    // Refused before any message is read: a selection that matches nothing gets the same answer, and nothing is written.
    for (const name of ['x-lazarus-replay-count', 'X-First-Death-Queue']) {
      for (const [selection, preview] of [[{ ids: [ids.G] }, true], [{ ids: ['987654321'] }, true], [{ ids: ['987654321'] }, false]] as const) {
        const bulk = await bulkEdit({ selection, operation: { type: 'set-header', name, value: { t: 'S', v: 'x' } }, preview })
        expect(bulk.status).toBe(422)
        expect(((await bulk.json()) as { error: { message: string } }).error.message).toContain(`Header "${name}"`)
      }
    }
    expect((await db.sql.query(`SELECT 1 FROM audit_log WHERE action = 'messages.bulk-edited' AND details->'operation'->>'name' ILIKE ANY (ARRAY['x-lazarus-replay-count', 'x-first-death-queue'])`)).rows).toEqual([])
    const removal = (await (await bulkEdit({ selection: { ids: [ids.G] }, operation: { type: 'remove-header', name: 'x-death' }, preview: true })).json()) as BulkEditResultDto
    expect(removal).toMatchObject({ applicable: 1 })
  })
})
