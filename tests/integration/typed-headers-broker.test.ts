import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { promisify } from 'node:util'
import { runInThisContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from '@/lib/server/platform/broker/amqplib'
import {
  decodeTypedTable,
  encodeTypedTable,
  getTypedHeaders,
  getTypedHeadersError,
  isTypedCodecInstalled,
  withTypedHeaders,
  type AmqplibCodec,
  type TypedTable,
} from '@/lib/server/platform/broker/typed-fields'

/*
 * What RabbitMQ 3.10.8 does to each field type, found with this file:
 *
 * Published and consumed directly, the header table comes back byte for byte: every tag
 * (t b B s u I i l f d D S T F A x V) keeps its type and value, including the unsigned B/u/i,
 * int64 and timestamp extremes, -0, non-UTF-8 long strings, a boolean octet of 2, and key order.
 *
 * NaN and ±Infinity (float or double) cannot be published at all: the broker closes the whole
 * connection with 541 INTERNAL_ERROR, so such headers never reach a DLQ, and a replay must not send one.
 *
 * Dead-lettering re-encodes the table. All types and values survive, but the top-level keys come
 * out sorted bytewise (nested tables keep their order) and a boolean octet other than 0/1 becomes 1.
 * x-death is an array of tables with count 'l', time 'T' and longstr queue/reason/exchange.
 */

const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

const nodeRequire = createRequire(import.meta.url)
const codecFile = path.join(path.dirname(nodeRequire.resolve('amqplib')), 'lib', 'codec.js')

/** An unpatched copy of amqplib's codec, to say what stock amqplib would have produced. */
function loadStockCodec(): AmqplibCodec {
  const file = codecFile
  const factory = runInThisContext(`(function (module, exports) {${readFileSync(file, 'utf8')}\n})`, { filename: file }) as (
    module: { exports: object },
    exports: object,
  ) => void
  const commonJs = { exports: {} }
  factory(commonJs, commonJs.exports)
  return commonJs.exports as AmqplibCodec
}
const stock = loadStockCodec()
const stockEncode = (headers: object): Buffer => {
  const buffer = Buffer.alloc(65536)
  const size = stock.encodeTable(buffer, headers, 0)
  return Buffer.from(buffer.subarray(4, size))
}

const b64 = (bytes: number[] | Buffer) => Buffer.from(bytes).toString('base64')
const notUtf8 = Buffer.from([0x66, 0x6f, 0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80])

const everyType: TypedTable = {
  'zz-first-key': { t: 'S', v: 'sorts last after dead-lettering' },
  bool: { t: 't', v: true },
  'bool-false': { t: 't', v: false },
  'bool-octet-2': { t: 't', b64: b64([2]) },
  'int8-min': { t: 'b', v: -128 },
  'int8-max': { t: 'b', v: 127 },
  'uint8-max': { t: 'B', v: 255 },
  'int16-min': { t: 's', v: -32768 },
  'uint16-max': { t: 'u', v: 65535 },
  'int32-min': { t: 'I', v: -2147483648 },
  'int32-max': { t: 'I', v: 2147483647 },
  'uint32-max': { t: 'i', v: 4294967295 },
  'int64-max': { t: 'l', v: '9223372036854775807' },
  'int64-min': { t: 'l', v: '-9223372036854775808' },
  'int64-small': { t: 'l', v: '3' },
  float: { t: 'f', v: Math.fround(3.14159) },
  'float-neg-zero': { t: 'f', v: '-0' },
  double: { t: 'd', v: 0.1 },
  'double-neg-zero': { t: 'd', v: '-0' },
  decimal: { t: 'D', v: { places: 2, digits: 12345 } },
  longstr: { t: 'S', v: 'héllo ✓ 😀' },
  'longstr-empty': { t: 'S', v: '' },
  'longstr-not-utf8': { t: 'S', b64: b64(notUtf8) },
  'timestamp-max': { t: 'T', v: '18446744073709551615' },
  timestamp: { t: 'T', v: '1700000000' },
  bytes: { t: 'x', b64: b64([0, 1, 2, 0xff]) },
  void: { t: 'V' },
  nested: {
    t: 'F',
    v: {
      zeta: { t: 'u', v: 7 },
      alpha: { t: 'A', v: [{ t: 'F', v: { deep: { t: 'l', v: '-1' }, raw: { t: 'x', b64: b64([9]) } } }, { t: 'B', v: 1 }] },
    },
  },
  mixed: { t: 'A', v: [{ t: 'i', v: 1 }, { t: 'S', v: 'x' }, { t: 'V' }, { t: 'd', v: 2.5 }, { t: 'A', v: [] }, { t: 'F', v: {} }] },
}

describe('typed headers through RabbitMQ', () => {
  let model: ChannelModel
  let channel: Channel

  beforeAll(async () => {
    model = await connect(AMQP_URL)
    model.on('error', () => {})
    channel = await model.createChannel()
  })

  afterAll(async () => {
    await model?.close()
  })

  const temporaryQueue = async (options: Parameters<Channel['assertQueue']>[1] = {}) =>
    (await channel.assertQueue(`lazarus-typed-${randomBytes(6).toString('hex')}`, { exclusive: true, autoDelete: true, ...options })).queue

  const receiveOne = async (queue: string, { noAck = true } = {}): Promise<ConsumeMessage> => {
    let resolve!: (message: ConsumeMessage) => void
    const received = new Promise<ConsumeMessage>((r) => (resolve = r))
    const { consumerTag } = await channel.consume(queue, (message) => message && resolve(message), { noAck })
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`nothing arrived on ${queue}`)), 10_000).unref())
    try {
      return await Promise.race([received, timeout])
    } finally {
      await channel.cancel(consumerTag)
    }
  }

  it('delivers every type exactly as published with withTypedHeaders', async () => {
    const queue = await temporaryQueue()
    channel.sendToQueue(queue, Buffer.from('body'), { headers: withTypedHeaders(everyType) })
    const message = await receiveOne(queue)

    const typed = getTypedHeaders(message.properties.headers)
    expect(getTypedHeadersError(message.properties.headers)).toBeUndefined()
    expect(typed).toEqual(everyType)
    expect(Object.keys(typed ?? {})).toEqual(Object.keys(everyType))
    expect(encodeTypedTable(typed ?? {}).equals(encodeTypedTable(everyType))).toBe(true)
    // Anything else in the process sees exactly what stock amqplib would have decoded.
    expect(message.properties.headers).toEqual(stock.decodeFields(encodeTypedTable(everyType)))
    expect(Object.keys(message.properties.headers ?? {})).toEqual(Object.keys(everyType))
  })

  it('leaves unmarked headers to stock amqplib, both ways', async () => {
    const queue = await temporaryQueue()
    const headers = {
      small: 3,
      negative: -300,
      big: 2 ** 40,
      fraction: 1.5,
      text: 'plain',
      buffer: Buffer.from([1, 2, 3]),
      when: { '!': 'timestamp', value: 1_700_000_000 },
      price: { '!': 'decimal', value: { places: 2, digits: 999 } },
      wide: { '!': 'long', value: 3 },
      flag: true,
      nothing: null,
      nested: { list: [1, 'a', null, false, { inner: 70000 }] },
    }
    channel.sendToQueue(queue, Buffer.from('body'), { headers })
    const message = await receiveOne(queue)

    const wire = stockEncode(headers)
    expect(message.properties.headers).toEqual(stock.decodeFields(wire))
    // The typed view shows the widths stock amqplib guessed.
    const typed = getTypedHeaders(message.properties.headers)
    expect(typed).toEqual(decodeTypedTable(wire))
    expect(typed?.small).toEqual({ t: 'b', v: 3 })
    expect(typed?.negative).toEqual({ t: 's', v: -300 })
    expect(typed?.big).toEqual({ t: 'l', v: String(2 ** 40) })
    expect(typed?.wide).toEqual({ t: 'l', v: '3' })
    expect(typed?.fraction).toEqual({ t: 'd', v: 1.5 })
  })

  it('re-publishes a received message byte for byte', async () => {
    const first = await temporaryQueue()
    const second = await temporaryQueue()
    channel.sendToQueue(first, Buffer.from('body'), { headers: withTypedHeaders(everyType) })
    const received = getTypedHeaders((await receiveOne(first)).properties.headers) ?? {}
    // Through JSON, as if read back from the headers column.
    channel.sendToQueue(second, Buffer.from('body'), { headers: withTypedHeaders(JSON.parse(JSON.stringify(received))) })
    const again = getTypedHeaders((await receiveOne(second)).properties.headers) ?? {}
    expect(encodeTypedTable(again).equals(encodeTypedTable(everyType))).toBe(true)
  })

  it('keeps types and values through dead-lettering, with sorted top-level keys and booleans normalised', async () => {
    const dlq = await temporaryQueue()
    // Not auto-delete: cancelling its consumer would delete it, and deletion does not dead-letter.
    const work = await temporaryQueue({ autoDelete: false, deadLetterExchange: '', deadLetterRoutingKey: dlq })
    channel.sendToQueue(work, Buffer.from('body'), { headers: withTypedHeaders(everyType) })
    channel.nack(await receiveOne(work, { noAck: false }), false, false)
    const message = await receiveOne(dlq)

    const typed = getTypedHeaders(message.properties.headers) ?? {}
    const { 'x-death': xDeath, ...rest } = typed
    const brokerKeys = Object.keys(rest).filter((key) => key.startsWith('x-first-death-'))
    for (const key of brokerKeys) delete rest[key]
    expect(brokerKeys.sort()).toEqual(['x-first-death-exchange', 'x-first-death-queue', 'x-first-death-reason'])
    expect(rest).toEqual({ ...everyType, 'bool-octet-2': { t: 't', v: true } })

    const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))
    expect(Object.keys(typed)).toEqual(Object.keys(typed).sort(byBytes))
    expect(Object.keys((rest.nested as { v: TypedTable }).v)).toEqual(['zeta', 'alpha'])

    expect(xDeath?.t).toBe('A')
    const [death] = (xDeath as { v: { t: 'F'; v: TypedTable }[] }).v
    expect(death.v.count).toEqual({ t: 'l', v: '1' })
    expect(death.v.time.t).toBe('T')
    expect(death.v.queue).toEqual({ t: 'S', v: work })
    expect(death.v.reason).toEqual({ t: 'S', v: 'rejected' })
    expect(death.v['routing-keys']).toEqual({ t: 'A', v: [{ t: 'S', v: work }] })
    // Stock amqplib's view of the same delivery is unchanged by the patch.
    expect(message.properties.headers).toEqual(stock.decodeFields(encodeTypedTable(typed)))
  })

  it.each([
    ['double NaN', { t: 'd', v: 'NaN' }],
    ['double Infinity', { t: 'd', v: 'Infinity' }],
    ['float -Infinity', { t: 'f', v: '-Infinity' }],
  ] as const)('loses the whole connection when a header holds %s', async (_name, nonFinite) => {
    const doomed = await connect(AMQP_URL)
    const closed = new Promise<Error>((resolve) => doomed.on('error', resolve))
    const doomedChannel = await doomed.createChannel()
    doomedChannel.on('error', () => {})
    const { queue } = await doomedChannel.assertQueue('', { exclusive: true })
    doomedChannel.sendToQueue(queue, Buffer.from('body'), { headers: withTypedHeaders({ n: nonFinite }) })
    const error = (await closed) as Error & { code?: number }
    expect(error.code).toBe(541)
    expect(error.message).toMatch(/INTERNAL_ERROR/)
  })
})

describe('lib/server/platform/broker/amqplib.ts', () => {
  it('patches the codec instance amqplib uses, once, however often the module is evaluated', async () => {
    const codec = nodeRequire(codecFile) as AmqplibCodec
    expect(isTypedCodecInstalled(codec)).toBe(true)
    const { decodeFields, encodeTable } = codec
    vi.resetModules()
    await import('@/lib/server/platform/broker/amqplib')
    expect(codec.decodeFields).toBe(decodeFields)
    expect(codec.encodeTable).toBe(encodeTable)
  })

  // A fresh Node process, since this one's module cache already holds the patched amqplib.
  const runNode = (script: string) =>
    promisify(execFile)(process.execPath, ['--conditions=react-server', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: path.resolve(import.meta.dirname, '../..'),
    })

  it('refuses to start when amqplib was loaded before the patch', async () => {
    const script = `
      import { createRequire } from 'node:module'
      createRequire(process.cwd() + '/')('amqplib')
      await import('./lib/server/platform/broker/amqplib.ts')`
    await expect(runNode(script)).rejects.toThrow(/amqplib was loaded before its header codec could be patched/)
  })

  it('lets later plain requires of amqplib share the patched codec', async () => {
    const script = `
      const { connect } = await import('./lib/server/platform/broker/amqplib.ts')
      const { createRequire } = await import('node:module')
      const amqplib = createRequire(process.cwd() + '/')('amqplib')
      console.log(amqplib.connect === connect)`
    expect((await runNode(script)).stdout.trim()).toBe('true')
  })
})
