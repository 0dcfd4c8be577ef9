import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { runInThisContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import {
  FieldTableError,
  TYPED_TABLE,
  decodeTypedTable,
  encodeTypedTable,
  getTypedHeaders,
  getTypedHeadersError,
  installTypedCodec,
  isTypedCodecInstalled,
  secondsToIso,
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
const sized = (bytes: Buffer) => Buffer.concat([uint(4, bytes.length), bytes])
const int = (width: number, n: number) => {
  const b = Buffer.alloc(width)
  b.writeIntBE(n, 0, width)
  return b
}
const uint = (width: number, n: number) => {
  const b = Buffer.alloc(width)
  b.writeUIntBE(n, 0, width)
  return b
}
const i64 = (n: bigint) => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(n)
  return b
}
const u64 = (n: bigint) => {
  const b = Buffer.alloc(8)
  b.writeBigUInt64BE(n)
  return b
}
const f32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeFloatBE(n)
  return b
}
const f64 = (n: number) => {
  const b = Buffer.alloc(8)
  b.writeDoubleBE(n)
  return b
}
const value = (tag: string, payload: Buffer = Buffer.alloc(0)) => Buffer.concat([Buffer.from(tag, 'latin1'), payload])
const field = (key: string | Buffer, encodedValue: Buffer) => {
  const k = typeof key === 'string' ? Buffer.from(key, 'utf8') : key
  return Buffer.concat([Buffer.of(k.length), k, encodedValue])
}
const table = (...fields: Buffer[]) => Buffer.concat(fields)
const b64 = (bytes: number[] | Buffer) => Buffer.from(bytes).toString('base64')

const notUtf8 = Buffer.from([0x66, 0x6f, 0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80])

type Case = [name: string, wire: Buffer, typed: TypedValue]
const cases: Case[] = [
  ['bool false', value('t', Buffer.of(0)), { t: 't', v: false }],
  ['bool true', value('t', Buffer.of(1)), { t: 't', v: true }],
  ['bool octet 2', value('t', Buffer.of(2)), { t: 't', b64: b64([2]) }],
  ['int8 min', value('b', int(1, -128)), { t: 'b', v: -128 }],
  ['int8 max', value('b', int(1, 127)), { t: 'b', v: 127 }],
  ['uint8 max', value('B', uint(1, 255)), { t: 'B', v: 255 }],
  ['int16 min', value('s', int(2, -32768)), { t: 's', v: -32768 }],
  ['int16 max', value('s', int(2, 32767)), { t: 's', v: 32767 }],
  ['uint16 max', value('u', uint(2, 65535)), { t: 'u', v: 65535 }],
  ['int32 min', value('I', int(4, -(2 ** 31))), { t: 'I', v: -(2 ** 31) }],
  ['int32 max', value('I', int(4, 2 ** 31 - 1)), { t: 'I', v: 2 ** 31 - 1 }],
  ['uint32 max', value('i', uint(4, 2 ** 32 - 1)), { t: 'i', v: 2 ** 32 - 1 }],
  ['int64 max', value('l', i64(2n ** 63n - 1n)), { t: 'l', v: '9223372036854775807' }],
  ['int64 min', value('l', i64(-(2n ** 63n))), { t: 'l', v: '-9223372036854775808' }],
  ['int64 2^53+1', value('l', i64(2n ** 53n + 1n)), { t: 'l', v: '9007199254740993' }],
  ['int64 small', value('l', i64(3n)), { t: 'l', v: '3' }],
  ['timestamp max', value('T', u64(2n ** 64n - 1n)), { t: 'T', v: '18446744073709551615' }],
  ['timestamp', value('T', u64(1_700_000_000n)), { t: 'T', v: '1700000000' }],
  ['float 0.1', value('f', f32(0.1)), { t: 'f', v: Math.fround(0.1) }],
  ['float -0', value('f', f32(-0)), { t: 'f', v: '-0' }],
  ['float NaN', value('f', f32(Number.NaN)), { t: 'f', v: 'NaN' }],
  ['float Infinity', value('f', f32(Number.POSITIVE_INFINITY)), { t: 'f', v: 'Infinity' }],
  ['float NaN payload', value('f', Buffer.from([0xff, 0x80, 0x00, 0x01])), { t: 'f', b64: b64([0xff, 0x80, 0x00, 0x01]) }],
  ['double 0.1', value('d', f64(0.1)), { t: 'd', v: 0.1 }],
  ['double max', value('d', f64(Number.MAX_VALUE)), { t: 'd', v: Number.MAX_VALUE }],
  ['double min subnormal', value('d', f64(Number.MIN_VALUE)), { t: 'd', v: Number.MIN_VALUE }],
  ['double -0', value('d', f64(-0)), { t: 'd', v: '-0' }],
  ['double NaN', value('d', f64(Number.NaN)), { t: 'd', v: 'NaN' }],
  ['double -Infinity', value('d', f64(Number.NEGATIVE_INFINITY)), { t: 'd', v: '-Infinity' }],
  [
    'double NaN payload',
    value('d', Buffer.from([0xff, 0xf8, 0, 0, 0, 0, 0, 0x2a])),
    { t: 'd', b64: b64([0xff, 0xf8, 0, 0, 0, 0, 0, 0x2a]) },
  ],
  ['decimal', value('D', Buffer.concat([Buffer.of(2), uint(4, 12345)])), { t: 'D', v: { places: 2, digits: 12345 } }],
  ['decimal max', value('D', Buffer.concat([Buffer.of(255), uint(4, 2 ** 32 - 1)])), { t: 'D', v: { places: 255, digits: 2 ** 32 - 1 } }],
  ['longstr', value('S', sized(Buffer.from('héllo wörld ✓ 😀'))), { t: 'S', v: 'héllo wörld ✓ 😀' }],
  ['longstr empty', value('S', sized(Buffer.alloc(0))), { t: 'S', v: '' }],
  ['longstr BOM', value('S', sized(Buffer.from([0xef, 0xbb, 0xbf, 0x41]))), { t: 'S', v: '\uFEFFA' }],
  ['longstr not UTF-8', value('S', sized(notUtf8)), { t: 'S', b64: b64(notUtf8) }],
  ['longstr with NUL', value('S', sized(Buffer.from('a\u0000b'))), { t: 'S', b64: b64(Buffer.from('a\u0000b')) }],
  ['byte array', value('x', sized(Buffer.from([0, 1, 2, 0xff]))), { t: 'x', b64: b64([0, 1, 2, 0xff]) }],
  ['byte array empty', value('x', sized(Buffer.alloc(0))), { t: 'x', b64: '' }],
  ['void', value('V'), { t: 'V' }],
  ['table empty', value('F', sized(Buffer.alloc(0))), { t: 'F', v: {} }],
  ['array empty', value('A', sized(Buffer.alloc(0))), { t: 'A', v: [] }],
  [
    'tables in arrays in tables',
    value(
      'F',
      sized(
        table(
          field(
            'list',
            value(
              'A',
              sized(
                Buffer.concat([
                  value('F', sized(table(field('deep', value('l', i64(-1n))), field('bytes', value('x', sized(Buffer.of(9))))))),
                  value('S', sized(Buffer.from('x'))),
                  value('V'),
                  value('A', sized(value('u', uint(2, 7)))),
                ]),
              ),
            ),
          ),
          field('z', value('t', Buffer.of(1))),
        ),
      ),
    ),
    {
      t: 'F',
      v: {
        list: {
          t: 'A',
          v: [
            { t: 'F', v: { deep: { t: 'l', v: '-1' }, bytes: { t: 'x', b64: b64([9]) } } },
            { t: 'S', v: 'x' },
            { t: 'V' },
            { t: 'A', v: [{ t: 'u', v: 7 }] },
          ],
        },
        z: { t: 't', v: true },
      },
    },
  ],
]

const everything = table(...cases.map(([name, wire]) => field(name, wire)))

describe('decodeTypedTable / encodeTypedTable', () => {
  it.each(cases)('%s round-trips byte for byte', (_name, wire, typed) => {
    const bytes = field('k', wire)
    const decoded = decodeTypedTable(bytes)
    expect(decoded).toEqual({ k: typed })
    expect(encodeTypedTable(decoded).equals(bytes)).toBe(true)
    // What the database hands back must encode identically too.
    expect(encodeTypedTable(JSON.parse(JSON.stringify(decoded))).equals(bytes)).toBe(true)
  })

  it('keeps key order, including a key named __proto__', () => {
    const bytes = table(field('zeta', value('b', int(1, 1))), field('__proto__', value('V')), field('alpha', value('V')), field('7', value('V')))
    expect(() => decodeTypedTable(bytes)).toThrow(/integer-like keys/)
    const ok = table(field('7', value('V')), field('zeta', value('b', int(1, 1))), field('__proto__', value('V')), field('alpha', value('V')))
    const decoded = decodeTypedTable(ok)
    expect(Object.keys(decoded)).toEqual(['7', 'zeta', '__proto__', 'alpha'])
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype)
    expect(encodeTypedTable(decoded).equals(ok)).toBe(true)
    expect(encodeTypedTable(JSON.parse(JSON.stringify(decoded))).equals(ok)).toBe(true)
  })

  it('round-trips a table holding every case at once', () => {
    const decoded = decodeTypedTable(everything)
    expect(Object.keys(decoded)).toEqual(cases.map(([name]) => name))
    expect(encodeTypedTable(decoded).equals(everything)).toBe(true)
  })

  it('handles an empty table', () => {
    expect(decodeTypedTable(Buffer.alloc(0))).toEqual({})
    expect(encodeTypedTable({}).length).toBe(0)
  })

  it('round-trips random tables', () => {
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]
    const randomValue = (depth: number): TypedValue => {
      const kind = pick(depth > 2 ? ['b', 'l', 'S', 'x', 'd', 'T'] : ['b', 'B', 's', 'u', 'I', 'i', 'l', 'T', 'f', 'd', 'D', 'S', 'x', 'V', 't', 'F', 'A'])
      const bytes = () => Buffer.from(Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * 256)))
      switch (kind) {
        case 'l':
          return { t: 'l', v: (BigInt.asIntN(64, BigInt(Math.floor(random() * 2 ** 53)) << BigInt(Math.floor(random() * 12)))).toString() }
        case 'T':
          return { t: 'T', v: BigInt.asUintN(64, BigInt(Math.floor(random() * 2 ** 53)) << 11n).toString() }
        case 'f':
          return { t: 'f', v: Math.fround((random() - 0.5) * 1e6) }
        case 'd':
          return { t: 'd', v: (random() - 0.5) * 1e300 }
        case 'D':
          return { t: 'D', v: { places: Math.floor(random() * 10), digits: Math.floor(random() * 2 ** 32) } }
        case 'S':
          return random() < 0.5 ? { t: 'S', v: bytes().toString('hex') } : { t: 'S', b64: Buffer.concat([Buffer.of(0xff), bytes()]).toString('base64') }
        case 'x':
          return { t: 'x', b64: bytes().toString('base64') }
        case 'V':
          return { t: 'V' }
        case 't':
          return { t: 't', v: random() < 0.5 }
        case 'F':
          return { t: 'F', v: randomTable(depth + 1) }
        case 'A':
          return { t: 'A', v: Array.from({ length: Math.floor(random() * 4) }, () => randomValue(depth + 1)) }
        default: {
          const tag = kind as 'b' | 'B' | 's' | 'u' | 'I' | 'i'
          const [min, max] = { b: [-128, 127], B: [0, 255], s: [-32768, 32767], u: [0, 65535], I: [-(2 ** 31), 2 ** 31 - 1], i: [0, 2 ** 32 - 1] }[tag]
          return { t: tag, v: min + Math.floor(random() * (max - min + 1)) }
        }
      }
    }
    const randomTable = (depth: number): TypedTable =>
      Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, (_, i) => [`k${i}-${Math.floor(random() * 1000)}`, randomValue(depth)]))

    for (let i = 0; i < 300; i++) {
      const typed = randomTable(0)
      const bytes = encodeTypedTable(typed)
      const decoded = decodeTypedTable(bytes)
      expect(decoded).toEqual(typed)
      expect(encodeTypedTable(decoded).equals(bytes)).toBe(true)
      expect(typedTableToAmqplib(decoded)).toEqual(stock.decodeFields(bytes))
    }
  })
})

describe('encodeTypedTable text', () => {
  // Short ASCII keys and strings are measured and copied in JavaScript, everything else through Buffer: both must write
  // exactly the UTF-8 bytes, at and around the cut-over length, with non-ASCII and lone surrogates too.
  const texts = ['', 'a', 'x-death', 'a'.repeat(63), 'a'.repeat(64), 'a'.repeat(65), 'é', 'grüße', '✓ ok', '😀', 'a\ud800b', 'é'.repeat(64), `${'a'.repeat(63)}é`, '\u007f\u0080']
  it.each(texts.map((text) => [text.length > 12 ? `${text.slice(0, 12)}… (${text.length})` : JSON.stringify(text), text]))('%s as key and value', (_, text) => {
    const key = Buffer.from(text, 'utf8').subarray(0, 255)
    const keyText = key.toString('utf8')
    const keyBytes = Buffer.from(keyText, 'utf8')
    const valueBytes = Buffer.from(text, 'utf8')
    const length = Buffer.alloc(4)
    length.writeUInt32BE(valueBytes.length)
    const expected = Buffer.concat([Buffer.from([keyBytes.length]), keyBytes, Buffer.from('S'), length, valueBytes])
    expect(encodeTypedTable({ [keyText]: { t: 'S', v: text } }).equals(expected)).toBe(true)
  })
})

describe('malformed input', () => {
  it('rejects every truncation of a valid table with a FieldTableError, never silently', () => {
    const boundaries = new Set<number>([0])
    let offset = 0
    for (const [name, wire] of cases) boundaries.add((offset += field(name, wire).length))
    for (let cut = 0; cut < everything.length; cut++) {
      const slice = everything.subarray(0, cut)
      if (boundaries.has(cut)) expect(() => decodeTypedTable(slice)).not.toThrow()
      else expect(() => decodeTypedTable(slice), `cut at ${cut}`).toThrow(FieldTableError)
    }
  })

  it.each([
    ['unknown tag', field('k', value('Z')), /unknown type tag 0x5a/],
    ['length past the end', field('k', value('S', uint(4, 10))), /truncated, needs 10 bytes/],
    ['nested table longer than its parent', field('a', value('A', sized(value('F', uint(4, 100))))), /truncated/],
    ['key length past the end', Buffer.of(5, 0x61), /key: truncated/],
    ['missing tag', field('k', Buffer.alloc(0)), /type tag: truncated/],
    ['int64 cut short', field('k', value('l', Buffer.alloc(7))), /truncated, needs 8 bytes/],
  ])('%s', (_name, bytes, message) => {
    expect(() => decodeTypedTable(bytes)).toThrow(FieldTableError)
    expect(() => decodeTypedTable(bytes)).toThrow(message)
  })

  it('names the path to the bad value', () => {
    const bytes = field('outer', value('A', sized(Buffer.concat([value('V'), value('F', sized(field('inner', value('?'))))]))))
    expect(() => decodeTypedTable(bytes)).toThrow('table["outer"][1]["inner"]: unknown type tag 0x3f')
  })

  it('keeps hostile nesting as raw bytes instead of overflowing the stack (typed-fields-deep.test.ts has the rest)', () => {
    // 100,000 arrays around a void, written in one pass (wrapping 100,000 times would copy gigabytes).
    const levels = 100_000
    const nested = Buffer.alloc(5 * levels + 1, 'V')
    for (let i = 0; i < levels; i++) {
      nested.write('A', 5 * i)
      nested.writeUInt32BE(5 * (levels - 1 - i) + 1, 5 * i + 1)
    }
    expect(decodeTypedTable(field('k', nested))).toEqual({ k: { t: 'A', b64: nested.subarray(5).toString('base64'), tooDeep: true } })
  })

  it('rejects what it could not reproduce, unless asked to be lossy', () => {
    const duplicate = table(field('a', value('b', int(1, 1))), field('b', value('V')), field('a', value('b', int(1, 2))))
    expect(() => decodeTypedTable(duplicate)).toThrow('table["a"]: duplicate key')
    const lossy = decodeTypedTable(duplicate, { lossy: true })
    expect(lossy).toEqual({ a: { t: 'b', v: 2 }, b: { t: 'V' } })
    expect(Object.keys(lossy)).toEqual(['a', 'b'])
    expect(typedTableToAmqplib(lossy)).toEqual(stock.decodeFields(duplicate))

    const badKey = field(Buffer.from([0x61, 0xff]), value('V'))
    expect(() => decodeTypedTable(badKey)).toThrow('key 0x61ff is not valid UTF-8')
    expect(decodeTypedTable(badKey, { lossy: true })).toEqual({ 'a\uFFFD': { t: 'V' } })

    const outOfOrder = table(field('b', value('V')), field('1', value('V')))
    expect(() => decodeTypedTable(outOfOrder)).toThrow(/integer-like keys \(1\)/)
    expect(Object.keys(decodeTypedTable(outOfOrder, { lossy: true }))).toEqual(['1', 'b'])
  })
})

describe('encodeTypedTable 64-bit integers', () => {
  // Up to 15 characters are written from a double, longer ones through BigInt: both must write the same eight bytes.
  const signed = ['0', '1', '-1', '4294967295', '4294967296', '-4294967296', '-4294967297', '999999999999999', '-99999999999999', '9007199254740993', '-9223372036854775808', '9223372036854775807']
  const unsigned = ['0', '4294967296', '999999999999999', '1000000000000000', '18446744073709551615']
  const bytes = (tag: string, n: bigint) => {
    const out = Buffer.alloc(10)
    out.write('k', 0, 'latin1')
    out.write(tag, 1 + 0, 'latin1')
    if (tag === 'l') out.writeBigInt64BE(n, 2)
    else out.writeBigUInt64BE(n, 2)
    return out
  }
  it.each(signed.map((v) => ['l', v]).concat(unsigned.map((v) => ['T', v])))("'%s' %s", (tag, v) => {
    const encoded = encodeTypedTable({ k: { t: tag, v } as TypedTable[string] })
    expect(encoded.subarray(1).equals(bytes(tag, BigInt(v)).subarray(0, 10))).toBe(true)
    expect(encoded[0]).toBe(1)
  })
})

describe('encodeTypedTable validation', () => {
  it.each([
    ['int8 overflow', { k: { t: 'b', v: 128 } }, /'b' expects an integer in \[-128, 127\]/],
    ['uint8 negative', { k: { t: 'B', v: -1 } }, /'B' expects/],
    ['int32 fraction', { k: { t: 'I', v: 1.5 } }, /'I' expects/],
    ['uint32 overflow', { k: { t: 'i', v: 2 ** 32 } }, /'i' expects/],
    ['int64 as number', { k: { t: 'l', v: 3 } }, /'l' expects a decimal string/],
    ['int64 overflow', { k: { t: 'l', v: '9223372036854775808' } }, /'l' expects/],
    ['int64 not canonical', { k: { t: 'l', v: '007' } }, /'l' expects/],
    ['timestamp negative', { k: { t: 'T', v: '-1' } }, /'T' expects/],
    ['float not a float32', { k: { t: 'f', v: 0.1 } }, /exactly representable as float32/],
    ['double as raw NaN', { k: { t: 'd', v: Number.NaN } }, /'d' expects a finite number/],
    ['double bad string', { k: { t: 'd', v: 'nan' } }, /'d' expects/],
    ['decimal places', { k: { t: 'D', v: { places: 256, digits: 1 } } }, /'D' expects/],
    ['bad base64', { k: { t: 'x', b64: 'not base64!' } }, /b64 is not canonical base64/],
    ['byte array without payload', { k: { t: 'x', v: 'AAE=' } }, /'x' expects a b64 payload/],
    ['unknown tag', { k: { t: 'Q' } }, /unknown type tag "Q"/],
    ['not a typed value', { k: 5 }, /expected a typed value/],
    ['array of non-values', { k: { t: 'A', v: [null] } }, /table\["k"\]\[0\]: expected a typed value/],
    ['nested table not an object', { k: { t: 'F', v: [] } }, /'F' expects a table object/],
    ['long key', { ['k'.repeat(256)]: { t: 'V' } }, /longer than 255 bytes/],
  ])('%s', (_name, input, message) => {
    expect(() => encodeTypedTable(input as unknown as TypedTable)).toThrow(FieldTableError)
    expect(() => encodeTypedTable(input as unknown as TypedTable)).toThrow(message)
  })
})

describe('views', () => {
  const decoded = decodeTypedTable(everything)

  it('toPlain gives convenient JS values', () => {
    const plain = typedTableToPlain(decoded)
    expect(plain['bool octet 2']).toBe(true)
    expect(plain['uint32 max']).toBe(2 ** 32 - 1)
    expect(plain['int64 small']).toBe(3)
    expect(plain['int64 max']).toBe(2n ** 63n - 1n)
    expect(plain['int64 min']).toBe(-(2n ** 63n))
    expect(plain['int64 2^53+1']).toBe(2n ** 53n + 1n)
    expect(plain.timestamp).toEqual(new Date(1_700_000_000_000))
    expect(plain['float 0.1']).toBe(Math.fround(0.1))
    expect(Object.is(plain['double -0'], -0)).toBe(true)
    expect(plain['double NaN payload']).toBeNaN()
    expect(plain['float Infinity']).toBe(Number.POSITIVE_INFINITY)
    expect(plain.decimal).toBe(123.45)
    expect(plain['longstr not UTF-8']).toBe(notUtf8.toString('utf8'))
    expect(plain['longstr with NUL']).toBe('a\u0000b')
    expect(plain['byte array']).toEqual(Buffer.from([0, 1, 2, 0xff]))
    expect(Buffer.isBuffer(plain['byte array'])).toBe(true)
    expect(plain.void).toBeNull()
    expect(plain['tables in arrays in tables']).toEqual({ list: [{ deep: -1, bytes: Buffer.of(9) }, 'x', null, [7]], z: true })
    expect(toPlain({ t: 'S', v: 'plain' })).toBe('plain')
  })

  it('toApiJson keeps plain JSON where it is exact and tags the rest', () => {
    const api = typedTableToApiJson(decoded)
    expect(api['bool false']).toBe(false)
    expect(api['int8 min']).toBe(-128)
    expect(api['uint32 max']).toBe(4294967295)
    expect(api['int64 small']).toEqual({ type: 'int64', value: '3' })
    expect(api['int64 min']).toEqual({ type: 'int64', value: '-9223372036854775808' })
    expect(api.timestamp).toEqual({ type: 'timestamp', value: '2023-11-14T22:13:20.000Z' })
    expect(api['timestamp max']).toEqual({ type: 'timestamp', value: '+584554051223-11-09T07:00:15.000Z' })
    expect(api.decimal).toEqual({ type: 'decimal', value: '123.45' })
    expect(api['decimal max']).toEqual({ type: 'decimal', value: `0.${'0'.repeat(245)}4294967295` })
    expect(api['float 0.1']).toEqual({ type: 'float', value: '0.1' })
    expect(api['float -0']).toEqual({ type: 'float', value: '-0' })
    expect(api['float NaN payload']).toEqual({ type: 'float', value: 'NaN' })
    expect(api['double 0.1']).toBe(0.1)
    expect(api['double -0']).toEqual({ type: 'double', value: '-0' })
    expect(api['double NaN']).toEqual({ type: 'double', value: 'NaN' })
    expect(api['double -Infinity']).toEqual({ type: 'double', value: '-Infinity' })
    expect(api.longstr).toBe('héllo wörld ✓ 😀')
    expect(api['longstr with NUL']).toBe('a\u0000b')
    expect(api['longstr not UTF-8']).toEqual({ type: 'longstr-bytes', value: b64(notUtf8) })
    expect(api['byte array']).toEqual({ type: 'bytes', value: 'AAEC/w==' })
    expect(api.void).toBeNull()
    expect(api['tables in arrays in tables']).toEqual({
      list: [{ deep: { type: 'int64', value: '-1' }, bytes: { type: 'bytes', value: 'CQ==' } }, 'x', null, [7]],
      z: true,
    })
    expect(JSON.parse(JSON.stringify(api))).toEqual(api)
    expect(toApiJson({ t: 'D', v: { places: 0, digits: 7 } })).toEqual({ type: 'decimal', value: '7' })
    expect(toApiJson({ t: 'D', v: { places: 3, digits: 5 } })).toEqual({ type: 'decimal', value: '0.005' })
  })

  it('secondsToIso agrees with Date wherever Date reaches', () => {
    for (const seconds of [0, 1, 59, 86399, 86400, 951_782_400, 4_107_542_400, 253_402_300_799, 253_402_300_800, 8_640_000_000_000]) {
      expect(secondsToIso(BigInt(seconds))).toBe(new Date(seconds * 1000).toISOString())
    }
    let seed = 7
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      const seconds = Math.floor((seed / 2 ** 31) * 8_640_000_000_000)
      expect(secondsToIso(BigInt(seconds))).toBe(new Date(seconds * 1000).toISOString())
    }
  })

  it('typedTableToAmqplib matches stock amqplib value for value', () => {
    const ours = typedTableToAmqplib(decoded)
    const theirs = stock.decodeFields(everything)
    expect(ours).toEqual(theirs)
    expect(Object.keys(ours)).toEqual(Object.keys(theirs))
    expect(Object.is(ours['double -0'], theirs['double -0'])).toBe(true)
    expect(ours['int64 2^53+1']).toBe(theirs['int64 2^53+1'])
    expect(ours['longstr not UTF-8']).toBe(theirs['longstr not UTF-8'])
  })
})

describe('amqplib codec patch', () => {
  const install = () => {
    const codec = loadStockCodec()
    installTypedCodec(codec)
    return codec
  }

  it('installs once', () => {
    const codec = loadStockCodec()
    expect(isTypedCodecInstalled(codec)).toBe(false)
    installTypedCodec(codec)
    const { decodeFields, encodeTable } = codec
    installTypedCodec(codec)
    expect(isTypedCodecInstalled(codec)).toBe(true)
    expect(codec.decodeFields).toBe(decodeFields)
    expect(codec.encodeTable).toBe(encodeTable)
  })

  it('decodes like stock amqplib and attaches the typed table out of sight', () => {
    const codec = install()
    const fields = codec.decodeFields(everything)
    expect(fields).toEqual(stock.decodeFields(everything))
    expect(Object.keys(fields)).toEqual(Object.keys(stock.decodeFields(everything)))
    expect(JSON.stringify(fields)).toBe(JSON.stringify(stock.decodeFields(everything)))
    expect(getTypedHeaders(fields)).toEqual(decodeTypedTable(everything))
    expect(fields[TYPED_TABLE as unknown as string]).toBeDefined()
    expect(getTypedHeadersError(fields)).toBeUndefined()
    expect(Object.getOwnPropertySymbols(fields).every((s) => !Object.getOwnPropertyDescriptor(fields, s)?.enumerable)).toBe(true)
  })

  it('falls back to a lossy table, with the reason, when bytes cannot be kept exactly', () => {
    const codec = install()
    const duplicate = table(field('a', value('V')), field('a', value('b', int(1, 5))))
    const fields = codec.decodeFields(duplicate)
    expect(fields).toEqual(stock.decodeFields(duplicate))
    expect(getTypedHeaders(fields)).toEqual({ a: { t: 'b', v: 5 } })
    expect(getTypedHeadersError(fields)?.message).toMatch(/duplicate key/)
  })

  it('leaves malformed bytes to stock amqplib', () => {
    const codec = install()
    const unknownTag = field('k', value('Z'))
    expect(() => codec.decodeFields(unknownTag)).toThrow(/Unexpected type tag "Z"/)
    // Stock amqplib silently truncates an overlong string; the patch keeps that, minus the typed table.
    const overlong = field('k', value('S', Buffer.concat([uint(4, 10), Buffer.from('abc')])))
    const fields = codec.decodeFields(overlong)
    expect(fields).toEqual(stock.decodeFields(overlong))
    expect(getTypedHeaders(fields)).toBeUndefined()
    expect(getTypedHeadersError(fields)).toBeInstanceOf(FieldTableError)
  })

  it('encodes unmarked objects exactly as stock amqplib', () => {
    const codec = install()
    const headers = { n: 3, big: 2 ** 40, f: 1.5, s: 'x', b: Buffer.of(1), ts: { '!': 'timestamp', value: 5 }, nested: { a: [1, null] } }
    const ours = Buffer.alloc(1024)
    const theirs = Buffer.alloc(1024)
    const size = codec.encodeTable(ours, headers, 3)
    expect(size).toBe(stock.encodeTable(theirs, headers, 3))
    expect(ours.equals(theirs)).toBe(true)
  })

  it('encodes withTypedHeaders objects from the typed form', () => {
    const codec = install()
    const typed = decodeTypedTable(everything)
    const headers = withTypedHeaders(typed)
    expect(getTypedHeaders(headers)).toBe(typed)
    expect(headers).toEqual(stock.decodeFields(everything))
    expect(Object.isSealed(headers)).toBe(true)
    expect(Object.isFrozen(headers['tables in arrays in tables'])).toBe(true)

    const buffer = Buffer.alloc(65536)
    const size = codec.encodeTable(buffer, headers, 10)
    expect(buffer.readUInt32BE(10)).toBe(everything.length)
    expect(buffer.subarray(14, 10 + size).equals(everything)).toBe(true)
  })

  it('keeps amqplib publish()’s CC and BCC, laid out as stock amqplib would', () => {
    const codec = install()
    const typed: TypedTable = { count: { t: 'l', v: '1' }, CC: { t: 'S', v: 'shadowed' } }
    // What amqplib's Args.publish builds from {headers, CC, BCC}.
    const published = Object.create(withTypedHeaders(typed)) as Record<string, unknown>
    published.CC = ['a', 'b']
    const buffer = Buffer.alloc(1024)
    const size = codec.encodeTable(buffer, published, 0)
    expect(decodeTypedTable(buffer.subarray(4, size))).toEqual({
      CC: { t: 'A', v: [{ t: 'S', v: 'a' }, { t: 'S', v: 'b' }] },
      count: { t: 'l', v: '1' },
    })
  })

  it('refuses to publish headers whose plain view was changed after wrapping', () => {
    const codec = install()
    const headers = withTypedHeaders({ a: { t: 'l', v: '1' } }) as Record<string, unknown>
    expect(() => {
      headers.b = 2
    }).toThrow(TypeError)
    headers.a = 2
    expect(() => codec.encodeTable(Buffer.alloc(64), headers, 0)).toThrow(/changed after wrapping/)
  })

  it('throws the same RangeError as stock amqplib when the table does not fit', () => {
    const codec = install()
    const headers = withTypedHeaders({ big: { t: 'x', b64: Buffer.alloc(100).toString('base64') } })
    expect(() => codec.encodeTable(Buffer.alloc(64), headers, 0)).toThrow(RangeError)
    expect(() => codec.encodeTable(Buffer.alloc(64), headers, 0)).toThrow(/exceeds the 64 byte encoding buffer/)
  })

  it('rejects an invalid typed table at the call site', () => {
    expect(() => withTypedHeaders({ k: { t: 'b', v: 1000 } })).toThrow(FieldTableError)
  })

  it('ignores objects that are not headers', () => {
    expect(getTypedHeaders(undefined)).toBeUndefined()
    expect(getTypedHeaders({ a: 1 })).toBeUndefined()
    expect(getTypedHeaders('x')).toBeUndefined()
  })
})
