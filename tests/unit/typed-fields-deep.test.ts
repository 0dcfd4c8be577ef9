import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { runInThisContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import {
  FieldTableError,
  MAX_DEPTH,
  decodeTypedTable,
  encodeTypedTable,
  getTooDeepHeaders,
  getTypedHeaders,
  getTypedHeadersError,
  installTypedCodec,
  isTooDeep,
  toApiJson,
  toPlain,
  typedTableToAmqplib,
  typedTableToApiJson,
  typedTableToPlain,
  withTypedHeaders,
  type AmqplibCodec,
  type TypedTable,
  type TypedValue,
} from '@/lib/server/platform/broker/typed-fields'
import { buildRow } from '@/lib/server/ingest/build-row'
import { DEFAULT_REDACTION_RULES } from '@/lib/server/redaction/default-rules'
import { createRedactor } from '@/lib/server/redaction/redactor'
import { buildPublish, replayHeaderBytes } from '@/lib/server/replay/publish-message'

/** A private, unpatched copy of amqplib's codec.js: the reference for "what stock amqplib does". */
function loadStockCodec(): AmqplibCodec {
  const file = path.join(path.dirname(createRequire(import.meta.url).resolve('amqplib')), 'lib', 'codec.js')
  const factory = runInThisContext(`(function (module, exports) {${readFileSync(file, 'utf8')}\n})`, { filename: file }) as (
    module: { exports: object },
    exports: object,
  ) => void
  const commonJs = { exports: {} }
  factory(commonJs, commonJs.exports)
  return commonJs.exports as AmqplibCodec
}
const stock = loadStockCodec()

// Wire-format builders, written independently of the code under test.
const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}
const field = (key: string, value: Buffer) => Buffer.concat([Buffer.of(Buffer.byteLength(key)), Buffer.from(key), value])
const sized = (tag: string, contents: Buffer) => Buffer.concat([Buffer.from(tag, 'latin1'), u32(contents.length), contents])
const longstr = (text: string) => sized('S', Buffer.from(text))
const int64 = (n: bigint) => {
  const b = Buffer.alloc(9)
  b.write('l')
  b.writeBigInt64BE(n, 1)
  return b
}

/** `levels` tables, each holding the next under key "k", the innermost holding a string. */
function tables(levels: number): Buffer {
  let value = longstr('bottom')
  for (let i = 0; i < levels; i++) value = sized('F', field('k', value))
  return value
}

/** `levels` arrays each holding the next, around a void; written in one pass, since wrapping would copy quadratically. */
function arrays(levels: number): Buffer {
  const bytes = Buffer.alloc(5 * levels + 1, 'V')
  for (let i = 0; i < levels; i++) {
    bytes.write('A', 5 * i)
    bytes.writeUInt32BE(5 * (levels - 1 - i) + 1, 5 * i + 1)
  }
  return bytes
}

const contentsB64 = (value: Buffer) => value.subarray(5).toString('base64')

/** A table with a too-deep header between ordinary ones. */
function withDeep(deep: Buffer, key = 'deep'): Buffer {
  return Buffer.concat([
    field('before', longstr('kept')),
    field(key, deep),
    field('x-error-type', longstr('com.acme.Boom')),
    field('x-retries', int64(3n)),
  ])
}

describe('headers nested deeper than MAX_DEPTH', () => {
  it('keeps a 600-level table header as its raw bytes and every other header typed', () => {
    const deep = tables(600)
    const bytes = withDeep(deep)
    const typed = decodeTypedTable(bytes)
    expect(Object.keys(typed)).toEqual(['before', 'deep', 'x-error-type', 'x-retries'])
    expect(typed.before).toEqual({ t: 'S', v: 'kept' })
    expect(typed.deep).toEqual({ t: 'F', b64: contentsB64(deep), tooDeep: true })
    expect(typed['x-error-type']).toEqual({ t: 'S', v: 'com.acme.Boom' })
    expect(typed['x-retries']).toEqual({ t: 'l', v: '3' })
    expect(isTooDeep(typed.deep)).toBe(true)
    expect(isTooDeep(typed.before)).toBe(false)
    // Exact: the same bytes come back, also after a trip through JSON (the headers column).
    expect(encodeTypedTable(typed).equals(bytes)).toBe(true)
    expect(encodeTypedTable(JSON.parse(JSON.stringify(typed)) as TypedTable).equals(bytes)).toBe(true)
  })

  it('keeps a header of 10,000 nested arrays, which stock amqplib cannot decode at all', () => {
    const deep = arrays(10_000)
    const bytes = withDeep(deep)
    expect(() => stock.decodeFields(bytes)).toThrow(RangeError)
    const typed = decodeTypedTable(bytes)
    expect(typed.deep).toEqual({ t: 'A', b64: contentsB64(deep), tooDeep: true })
    expect(typed['x-error-type']).toEqual({ t: 'S', v: 'com.acme.Boom' })
    expect(encodeTypedTable(typed).equals(bytes)).toBe(true)
  })

  it('draws the line at MAX_DEPTH nested containers', () => {
    const atLimit = decodeTypedTable(field('k', tables(MAX_DEPTH)))
    expect(isTooDeep(atLimit.k)).toBe(false)
    expect(encodeTypedTable(atLimit).equals(field('k', tables(MAX_DEPTH)))).toBe(true)
    const pastLimit = decodeTypedTable(field('k', tables(MAX_DEPTH + 1)))
    expect(pastLimit.k).toEqual({ t: 'F', b64: contentsB64(tables(MAX_DEPTH + 1)), tooDeep: true })
  })

  it('keeps a wide array of 10,000 elements typed: width is not depth', () => {
    const items = Buffer.alloc(5 * 10_000)
    for (let i = 0; i < 10_000; i++) {
      items.write('I', 5 * i)
      items.writeInt32BE(i - 5_000, 5 * i + 1)
    }
    const bytes = field('wide', sized('A', items))
    const typed = decodeTypedTable(bytes)
    expect(isTooDeep(typed.wide)).toBe(false)
    expect((typed.wide as { v: TypedValue[] }).v).toHaveLength(10_000)
    expect(encodeTypedTable(typed).equals(bytes)).toBe(true)
  })

  it('still refuses malformed bytes, deep or not, rather than keeping them', () => {
    // A container whose length runs past the table is truncation, not depth.
    expect(() => decodeTypedTable(field('k', Buffer.concat([Buffer.from('A'), u32(100), Buffer.from('V')])))).toThrow(/truncated/)
    // A bad tag before the depth limit is reached is reported as before.
    expect(() => decodeTypedTable(field('k', sized('A', Buffer.from('Z'))))).toThrow(/unknown type tag 0x5a/)
  })

  it('keeps the deep header raw in lossy decoding too', () => {
    const deep = tables(600)
    const duplicate = Buffer.concat([field('a', longstr('1')), field('deep', deep), field('a', longstr('2'))])
    expect(() => decodeTypedTable(duplicate)).toThrow(/duplicate key/)
    expect(decodeTypedTable(duplicate, { lossy: true })).toEqual({ a: { t: 'S', v: '2' }, deep: { t: 'F', b64: contentsB64(deep), tooDeep: true } })
  })

  it('encodes a raw value byte for byte anywhere, and still refuses a typed value nested too deep or bad base64', () => {
    const contents = arrays(1_000).subarray(5)
    const table: TypedTable = { outer: { t: 'F', v: { inner: { t: 'A', b64: contents.toString('base64'), tooDeep: true } } } }
    expect(encodeTypedTable(table).equals(field('outer', sized('F', field('inner', sized('A', contents)))))).toBe(true)

    let nested: TypedValue = { t: 'V' }
    for (let i = 0; i <= MAX_DEPTH; i++) nested = { t: 'A', v: [nested] }
    expect(() => encodeTypedTable({ k: nested })).toThrow(/nested deeper than/)
    expect(() => encodeTypedTable({ k: { t: 'F', b64: 'not base64!', tooDeep: true } })).toThrow(FieldTableError)
  })

  it('shows the raw bytes in every view, clearly marked in the API', () => {
    const deep = tables(600)
    const raw: TypedValue = { t: 'F', b64: contentsB64(deep), tooDeep: true }
    const rawArray: TypedValue = { t: 'A', b64: contentsB64(arrays(600)), tooDeep: true }
    expect(toApiJson(raw)).toEqual({ type: 'table-too-deep', value: contentsB64(deep) })
    expect(toApiJson(rawArray)).toEqual({ type: 'array-too-deep', value: contentsB64(arrays(600)) })
    expect(toPlain(raw)).toEqual(deep.subarray(5))
    expect(typedTableToAmqplib({ raw })).toEqual({ raw: deep.subarray(5) })
    expect(typedTableToApiJson({ ok: { t: 'l', v: '1' }, raw })).toEqual({ ok: { type: 'int64', value: '1' }, raw: { type: 'table-too-deep', value: contentsB64(deep) } })
    expect(typedTableToPlain({ ok: { t: 'S', v: 'x' }, raw })).toEqual({ ok: 'x', raw: deep.subarray(5) })
  })
})

describe('exporting a too-deep header', () => {
  it('masks what the detectors find in its bytes, keeping their length, the marker and the other headers', () => {
    let deep = longstr('mail bob@example.com now')
    for (let i = 0; i < 600; i++) deep = sized('F', field('k', deep))
    const typed = decodeTypedTable(withDeep(deep))
    const redacted = createRedactor(DEFAULT_REDACTION_RULES).typedTable(typed)
    const raw = redacted.deep as { t: string; b64: string; tooDeep: boolean }
    expect(raw).toMatchObject({ t: 'F', tooDeep: true })
    const bytes = Buffer.from(raw.b64, 'base64')
    expect(bytes).toHaveLength(deep.length - 5)
    expect(bytes.toString('latin1')).not.toContain('bob@example.com')
    expect(bytes.toString('latin1')).toContain('mail ')
    expect(redacted['x-error-type']).toEqual(typed['x-error-type'])
  })
})

describe('the amqplib codec patch with a too-deep header', () => {
  const install = () => {
    const codec = loadStockCodec()
    installTypedCodec(codec)
    return codec
  }

  it('attaches the exact typed table and names the too-deep header; the plain view stays stock amqplib’s', () => {
    const codec = install()
    const bytes = withDeep(tables(600))
    const fields = codec.decodeFields(bytes)
    expect(fields).toEqual(stock.decodeFields(bytes))
    expect(getTypedHeaders(fields)).toEqual(decodeTypedTable(bytes))
    expect(getTypedHeadersError(fields)).toBeUndefined()
    expect(getTooDeepHeaders(fields)).toEqual(['deep'])
    expect(Object.getOwnPropertySymbols(fields).every((s) => !Object.getOwnPropertyDescriptor(fields, s)?.enumerable)).toBe(true)
  })

  it('does not let stock amqplib’s stack overflow escape (it would close the connection and redeliver forever)', () => {
    const codec = install()
    const deep = arrays(10_000)
    const fields = codec.decodeFields(withDeep(deep))
    expect(fields.deep).toEqual(deep.subarray(5))
    expect(fields['x-error-type']).toBe('com.acme.Boom')
    expect(getTooDeepHeaders(fields)).toEqual(['deep'])
    expect(encodeTypedTable(getTypedHeaders(fields)!).equals(withDeep(deep))).toBe(true)
  })

  it('reports nothing for ordinary tables', () => {
    const fields = install().decodeFields(field('k', longstr('v')))
    expect(getTooDeepHeaders(fields)).toBeUndefined()
  })

  it('publishes the raw header byte for byte through withTypedHeaders', () => {
    const codec = install()
    const bytes = withDeep(arrays(10_000))
    const buffer = Buffer.alloc(65536)
    const size = codec.encodeTable(buffer, withTypedHeaders(decodeTypedTable(bytes)), 0)
    expect(buffer.subarray(4, size).equals(bytes)).toBe(true)
  })
})

describe('a dead letter with a too-deep header', () => {
  // Headers as the patched amqplib hands them to the drainer.
  const codec = loadStockCodec()
  installTypedCodec(codec)
  const delivery = (bytes: Buffer) => {
    const headers = codec.decodeFields(bytes)
    return {
      content: Buffer.from('{}'),
      fields: { exchange: '', routingKey: 'orders.dlq', redelivered: false, deliveryTag: 1, consumerTag: 'c' },
      properties: { headers },
    } as never
  }

  it('is stored with every header, flagged, and its error derived from the others', () => {
    const bytes = withDeep(tables(600))
    const row = buildRow({ queue: 'orders.dlq', message: delivery(bytes), maxBodyBytes: 1024, now: new Date('2026-12-01T12:00:00Z') })
    expect(row.flags).toContain('header-too-deep:deep')
    expect(row.flags.some((f) => f.startsWith('headers-lossy'))).toBe(false)
    expect(row.errorType).toBe('com.acme.Boom')
    expect(encodeTypedTable(JSON.parse(row.headersJson) as TypedTable).equals(bytes)).toBe(true)
  })

  it('is replayed with the raw header in place, then the lineage headers', () => {
    const deep = arrays(10_000)
    const message = { id: '7', body: Buffer.from('{}'), properties: {}, headers: decodeTypedTable(withDeep(deep)), lineageOriginId: null, replayCount: 0 }
    const build = buildPublish(message, { kind: 'replay', replayId: 'r-1', actor: 'alice' }, { amqpUser: 'guest', maxBodyBytes: 1024 })
    expect(build.ok).toBe(true)
    const encoded = (build as { headers: { encoded: Buffer } }).headers.encoded
    const lineage = Buffer.concat([
      field('x-lazarus-origin-id', longstr('7')),
      field('x-lazarus-replay-id', longstr('r-1')),
      field('x-lazarus-replay-count', int64(1n)),
      field('x-lazarus-replayed-by', longstr('alice')),
    ])
    expect(encoded.equals(Buffer.concat([withDeep(deep), lineage]))).toBe(true)
    expect(replayHeaderBytes(message, 'alice')).toBeGreaterThan(deep.length)
  })
})
