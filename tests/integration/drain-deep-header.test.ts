import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, type ChannelModel } from '@/lib/server/platform/broker/amqplib'
import { encodeTypedTable, publishHeadersSlot, type TypedTable } from '@/lib/server/platform/broker/typed-fields'
import { startDrainer, type Drainer } from '@/lib/server/engines/drainer/drainer'
import { getMessage } from '@/lib/server/messages/get-message'
import { exportMessages } from '@/lib/server/export/stream-export'
import { createReplay } from '@/lib/server/replay/create-replay'
import type { ReplayExecutor } from '@/lib/server/engines/replay-executor/executor'
import { BROKER_HEADERS } from '@/lib/server/replay/publish-message'
import { exportQuerySchema } from '@/lib/shared/schemas/export'
import type { ReplayCreatedDto } from '@/lib/shared/schemas/replay'
import { brokerConnection, uniqueName, waitFor } from '../helpers/broker'
import { recordFrames, tableFields, type FrameRecorder } from '../helpers/frame-recorder'
import { collect, deadLetterThrough, declareWorkTopology, startTestExecutor, waitForJob } from '../helpers/replay'
import { createTestDb, type TestDb } from '../helpers/test-db'
import { composition } from '@/lib/server/platform/process/composition'

/*
 * One header nested deeper than Lazarus' decoder descends (500 levels) used to cost a dead letter all its headers:
 * stored with none, error type unknown. The wire bytes here are built by hand, independently of the code under test,
 * published as they are, dead-lettered by RabbitMQ, drained, and replayed; both deliveries are read off the wire.
 */

const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff])
const field = (key: string, value: Buffer) => Buffer.concat([Buffer.of(Buffer.byteLength(key)), Buffer.from(key), value])
const sized = (tag: 'S' | 'x' | 'F' | 'A', contents: Buffer) => Buffer.concat([Buffer.from(tag), u32(contents.length), contents])
const longstr = (text: string) => sized('S', Buffer.from(text))
const int64 = (n: bigint) => {
  const b = Buffer.alloc(9)
  b.write('l')
  b.writeBigInt64BE(n, 1)
  return b
}
const float = (n: number) => {
  const b = Buffer.alloc(5)
  b.write('f')
  b.writeFloatBE(n, 1)
  return b
}

/** A table inside a table … 600 times. */
function tables(levels: number): Buffer {
  let value = longstr('the bottom')
  for (let i = 0; i < levels; i++) value = sized('F', field('k', value))
  return value
}

/** An array inside an array … `levels` times: 50,000 bytes for 10,000, past the depth where stock amqplib's recursive decoder overflows the stack. */
function arrays(levels: number): Buffer {
  let value = sized('A', Buffer.alloc(0))
  for (let i = 1; i < levels; i++) value = sized('A', value)
  return value
}

/** 10,000 int32 elements side by side: wide, not deep, so it must stay an ordinary typed array. */
function wideArray(count: number): Buffer {
  const items = Buffer.alloc(5 * count)
  for (let i = 0; i < count; i++) {
    items.write('I', 5 * i)
    items.writeInt32BE(i - 5000, 5 * i + 1)
  }
  return sized('A', items)
}

const CASES = {
  'tables-600': { key: 'deep', value: tables(600), tooDeep: 'F' },
  'arrays-10000': { key: 'deep', value: arrays(10_000), tooDeep: 'A' },
  'wide-array-10000': { key: 'wide', value: wideArray(10_000), tooDeep: null },
} as const
type CaseName = keyof typeof CASES

/** The other headers, with the types they must keep. */
const OTHERS: TypedTable = {
  'a-first': { t: 'S', v: 'stored before the deep one' },
  'x-error-type': { t: 'S', v: 'com.acme.DeepHeaderException' },
  'x-error-message': { t: 'S', v: 'header nests too deep' },
  'x-failure-kind': { t: 'S', v: 'invalid' },
  'x-retries': { t: 'l', v: '3' },
  'x-ratio': { t: 'f', v: 1.5 },
  'x-service': { t: 'S', v: 'orders' },
  'x-trace': { t: 'x', b64: Buffer.of(0, 0xff, 7).toString('base64') },
}

function publishedTable(name: CaseName): Buffer {
  const { key, value } = CASES[name]
  return Buffer.concat([
    field('a-first', longstr('stored before the deep one')),
    field('case', longstr(name)),
    field(key, value),
    field('x-error-type', longstr('com.acme.DeepHeaderException')),
    field('x-error-message', longstr('header nests too deep')),
    field('x-failure-kind', longstr('invalid')),
    field('x-retries', int64(3n)),
    field('x-ratio', float(1.5)),
    field('x-service', longstr('orders')),
    field('x-trace', sized('x', Buffer.of(0, 0xff, 7))),
  ])
}

const fieldsByKey = (table: Buffer) => new Map(tableFields(table).map((f) => [f.key, f.bytes]))
const caseOf = (table: Buffer): string | undefined => {
  const bytes = fieldsByKey(table).get('case')
  return bytes ? bytes.subarray(1 + 4 + 1 + 4).toString() : undefined
}

type Row = { id: string; headers: TypedTable; flags: string[]; error_type: string | null; error_message: string | null; failure_kind: string; service: string | null; origin_queue: string | null }

describe('a header nested too deep to store', () => {
  let db: TestDb
  let connection: ChannelModel
  let drainer: Drainer
  let executor: ReplayExecutor
  let drained: FrameRecorder
  let replayed: FrameRecorder
  const names = { exchange: uniqueName('deep_x'), key: 'deep.key', work: uniqueName('deep_work'), dlq: uniqueName('deep_dlq') }
  const rows = new Map<CaseName, Row>()

  beforeAll(async () => {
    db = await createTestDb()
    connection = await brokerConnection()
    const channel = await connection.createChannel()
    await declareWorkTopology(channel, names)
    await channel.close()
    // A slot sends the bytes it is loaded with as they are: the hand-built tables go out untouched by Lazarus' encoder.
    await deadLetterThrough(connection, {
      ...names,
      messages: (Object.keys(CASES) as CaseName[]).map((name) => ({
        body: Buffer.from(JSON.stringify({ case: name })),
        options: { messageId: name, contentType: 'application/json', headers: publishHeadersSlot().load({ table: {}, encoded: publishedTable(name) }) },
      })),
    })

    // The drainer reads the DLQ through a recording relay, so the test knows the exact table RabbitMQ delivered.
    drained = await recordFrames()
    const { rows: source } = await db.sql.query<{ id: string }>(`INSERT INTO sources (vhost, queue) VALUES ('/', $1) RETURNING id::text`, [names.dlq])
    drainer = startDrainer({
      db,
      config: { AMQP_URL: drained.url, LAZARUS_DRAIN_BATCH: 10, LAZARUS_DRAIN_PREFETCH: 20, LAZARUS_DRAIN_FLUSH_MS: 20, LAZARUS_MAX_BODY_BYTES: 16 * 1024 * 1024 },
      reconcileMs: 500,
    })
    await waitFor(
      async () => {
        const { rows: stored } = await db.sql.query<Row & { case: CaseName }>(
          `SELECT id::text, properties->>'messageId' AS case, headers, flags, error_type, error_message, failure_kind, service, origin_queue
           FROM dead_letters WHERE source_id = $1::bigint`,
          [source[0].id],
        )
        for (const row of stored) rows.set(row.case, row)
        return stored.length === Object.keys(CASES).length
      },
      { what: 'all three dead letters stored', timeoutMs: 30_000 },
    )
    executor = startTestExecutor(db)
  })

  afterAll(async () => {
    await executor?.stop()
    await drainer?.stop()
    await drained?.close()
    await replayed?.close()
    // A fresh connection: the test's own may have been closed by the broker or by a failed decode.
    const cleanup = await brokerConnection()
    const channel = await cleanup.createChannel()
    for (const q of [names.work, names.dlq]) await channel.deleteQueue(q).catch(() => {})
    await channel.deleteExchange(names.exchange).catch(() => {})
    await cleanup.close()
    await connection?.close().catch(() => {})
    await db?.drop()
  })

  const deliveredToDlq = (name: CaseName): Buffer => {
    const table = drained.headerTables().find((t) => caseOf(t) === name)
    if (!table) throw new Error(`no delivery of ${name} recorded`)
    return table
  }

  for (const name of ['tables-600', 'arrays-10000'] as const) {
    it(`${name}: keeps every other header with its type, the deep one as its raw bytes, and flags it`, () => {
      const row = rows.get(name)!
      const { key, value, tooDeep } = CASES[name]
      for (const [header, typed] of Object.entries(OTHERS)) expect(row.headers[header], header).toEqual(typed)
      expect(row.headers[key]).toEqual({ t: tooDeep, b64: value.subarray(5).toString('base64'), tooDeep: true })
      expect(row.headers['x-death']).toMatchObject({ t: 'A', v: [{ t: 'F', v: { queue: { t: 'S', v: names.work }, reason: { t: 'S', v: 'rejected' } } }] })
      expect(row.flags).toContain(`header-too-deep:${key}`)
      expect(row.flags.filter((f) => f.startsWith('headers-lossy'))).toEqual([])
      // Derived from the other headers, as for any dead letter.
      expect(row).toMatchObject({ error_type: 'com.acme.DeepHeaderException', error_message: 'header nests too deep', failure_kind: 'invalid', service: 'orders', origin_queue: names.work })
      // Stored exactly: the typed table re-encodes to the table RabbitMQ delivered, deep header included.
      expect(encodeTypedTable(row.headers).equals(deliveredToDlq(name))).toBe(true)
      expect(fieldsByKey(deliveredToDlq(name)).get(key)?.equals(field(key, value))).toBe(true)
    })
  }

  it('keeps a 10,000-element array that is wide, not deep, as an ordinary typed array', () => {
    const row = rows.get('wide-array-10000')!
    const wide = row.headers.wide as { t: string; v: { t: string; v: number }[] }
    expect(wide.t).toBe('A')
    expect(wide.v).toHaveLength(10_000)
    expect(wide.v[0]).toEqual({ t: 'I', v: -5000 })
    expect(wide.v[9_999]).toEqual({ t: 'I', v: 4999 })
    expect(row.flags.filter((f) => f.startsWith('header'))).toEqual([])
    expect(row.error_type).toBe('com.acme.DeepHeaderException')
    expect(encodeTypedTable(row.headers).equals(deliveredToDlq('wide-array-10000'))).toBe(true)
  })

  it('shows the deep header in the message detail as its raw bytes, clearly marked', async () => {
    const row = rows.get('tables-600')!
    const detail = await getMessage({ db, id: row.id })
    const b64 = CASES['tables-600'].value.subarray(5).toString('base64')
    expect(detail.headers.deep).toEqual({ type: 'table-too-deep', value: b64 })
    expect(detail.headersTyped.deep).toEqual({ t: 'F', b64, tooDeep: true })
    expect(detail.headers['x-retries']).toEqual({ type: 'int64', value: '3' })
    expect(detail.errorType).toBe('com.acme.DeepHeaderException')
    expect(detail.flags).toContain('header-too-deep:deep')
    expect(detail.xDeath).toMatchObject([{ queue: names.work, reason: 'rejected' }])
  })

  it('exports the deep header in JSON Lines as a typed value carrying its raw bytes', async () => {
    const ids = (['tables-600', 'arrays-10000'] as const).map((name) => rows.get(name)!.id)
    // The operation behind GET /api/export, with the default redaction rules applied.
    const file = await exportMessages(exportQuerySchema.parse({ format: 'jsonl', ids: ids.join(',') }), { db, baseUrl: 'http://lazarus.test' })
    const lines = (await new Response(file.body).text()).trim().split('\n').map((line) => JSON.parse(line))
    expect(lines).toHaveLength(2)
    for (const line of lines) {
      const name = line.headersTyped.case.v as 'tables-600' | 'arrays-10000'
      expect(line.headersTyped.deep).toEqual({ t: CASES[name].tooDeep, b64: CASES[name].value.subarray(5).toString('base64'), tooDeep: true })
      expect(line.headersTyped['x-retries']).toEqual({ t: 'l', v: '3' })
      expect(line.flags).toContain('header-too-deep:deep')
      expect(line.error.type).toBe('com.acme.DeepHeaderException')
    }
  })

  it('replays the whole header table byte for byte, the deep header included, plus the lineage headers', async () => {
    replayed = await recordFrames()
    const ids = [...rows.values()].map((row) => row.id)
    const created = (await createReplay({ db, control: composition().control, replayWork: composition().replayWork, input: { selection: { ids } }, actor: 'alice' })) as ReplayCreatedDto
    expect(created.plan).toMatchObject({ matched: 3, replayable: 3 })
    expect(await waitForJob(db.sql, created.id)).toMatchObject({ status: 'completed', confirmed: 3, failed: 0 })
    const consumer = await connect(replayed.url)
    consumer.on('error', () => {})
    try {
      expect(await collect(consumer, names.work, 3)).toHaveLength(3)
    } finally {
      await consumer.close()
    }

    const lineage = ['x-lazarus-origin-id', 'x-lazarus-replay-id', 'x-lazarus-replay-count', 'x-lazarus-replayed-by']
    for (const name of Object.keys(CASES) as CaseName[]) {
      const sent = replayed.headerTables().find((t) => caseOf(t) === name)
      expect(sent, name).toBeDefined()
      const sentFields = tableFields(sent!)
      // What RabbitMQ delivered to the DLQ, field for field and in its order, minus the broker's own headers.
      const expected = Buffer.concat(tableFields(deliveredToDlq(name)).filter((f) => !BROKER_HEADERS.has(f.key)).map((f) => f.bytes))
      expect(Buffer.concat(sentFields.filter((f) => !lineage.includes(f.key)).map((f) => f.bytes)).equals(expected), name).toBe(true)
      expect(sentFields.map((f) => f.key).slice(-lineage.length)).toEqual(lineage)
      const { key, value } = CASES[name]
      expect(fieldsByKey(sent!).get(key)?.equals(field(key, value)), name).toBe(true)
    }
  })
})
