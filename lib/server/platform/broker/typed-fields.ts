import 'server-only'
import { isUtf8 } from 'node:buffer'

/**
 * Lossless AMQP 0-9-1 field tables (headers, arguments).
 *
 * amqplib's codec keeps neither integer widths nor 64-bit precision nor non-UTF-8 long strings
 * (docs/rabbitmq.md#typed-headers), so Lazarus decodes every table itself into a tagged form that
 * survives JSON (the `headers` jsonb column) and re-encodes it byte for byte on replay.
 *
 * Tags are the letters RabbitMQ and amqplib put on the wire, not the ones in the 0-9-1 spec.
 * `b64` always holds the raw payload bytes of a value whose natural JSON form cannot reproduce them:
 * a long string that is not UTF-8 (or holds U+0000, which jsonb rejects), a NaN with a non-default
 * bit pattern, a boolean octet other than 0 or 1, byte arrays, and a header nested deeper than
 * MAX_DEPTH (see TooDeepValue).
 */

export type IntTag = 'b' | 'B' | 's' | 'u' | 'I' | 'i'
export type NonFiniteOrNegativeZero = 'NaN' | 'Infinity' | '-Infinity' | '-0'

export type TypedValue =
  | { t: 't'; v: boolean }
  | { t: 't'; b64: string }
  | { t: IntTag; v: number }
  /** int64 (signed) and timestamp (unsigned 64-bit seconds), as decimal strings. */
  | { t: 'l' | 'T'; v: string }
  | { t: 'f' | 'd'; v: number | NonFiniteOrNegativeZero }
  | { t: 'f' | 'd'; b64: string }
  | { t: 'D'; v: { places: number; digits: number } }
  | { t: 'S'; v: string }
  | { t: 'S'; b64: string }
  | { t: 'x'; b64: string }
  | { t: 'F'; v: TypedTable }
  | { t: 'A'; v: TypedValue[] }
  | TooDeepValue
  | { t: 'V' }

/**
 * A header (a top-level value) whose tables or arrays nest deeper than MAX_DEPTH: its contents (the bytes after the
 * 4-byte length) kept undecoded. Decoding it would cost the whole table (and, in stock amqplib, overflow the stack), and
 * its typed form would be thousands of JSON levels deep; as bytes, the other headers stay typed and a replay re-sends
 * it exactly. `tooDeep` marks it for readers of the stored JSON and exports.
 */
export type TooDeepValue = { t: 'F' | 'A'; b64: string; tooDeep: true }

export type TypedTable = Record<string, TypedValue>

/** Thrown for malformed bytes on decode and for invalid typed values on encode. */
export class FieldTableError extends Error {
  override name = 'FieldTableError'
}

/** Nesting past MAX_DEPTH: on decode, caught at the header it started in, which is then kept as a TooDeepValue. */
class TooDeepError extends FieldTableError {}

/**
 * Far beyond anything real; keeps hostile nesting from ending in a stack overflow, here and in everything that walks a
 * typed table recursively (V8's JSON.stringify overflows some 4,000 levels down, and a typed level is two JSON levels).
 */
export const MAX_DEPTH = 500

const TAG_F = 0x46
const TAG_A = 0x41

export function isTooDeep(value: TypedValue): value is TooDeepValue {
  return (value.t === 'F' || value.t === 'A') && 'b64' in value
}

const INT_RANGES: Record<IntTag, readonly [number, number, number]> = {
  // [min, max, byte width]
  b: [-0x80, 0x7f, 1],
  B: [0, 0xff, 1],
  s: [-0x8000, 0x7fff, 2],
  u: [0, 0xffff, 2],
  I: [-0x80000000, 0x7fffffff, 4],
  i: [0, 0xffffffff, 4],
}
const DECIMAL = /^(0|-?[1-9][0-9]*)$/
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const UINT64_MAX = 2n ** 64n - 1n

const isIntTag = (tag: string): tag is IntTag => Object.hasOwn(INT_RANGES, tag)

/** Defines rather than assigns, so a key named "__proto__" stays an ordinary own property. */
function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

type Latin1Slicing = Buffer & { latin1Slice?: (start: number, end: number) => string }
/**
 * ASCII bytes as a string. Node's Buffer#latin1Slice skips toString's encoding lookup, measurable at tens of strings
 * per message; it is not a documented API, so a Node without it gets toString.
 */
const latin1: (buf: Buffer, start: number, end: number) => string =
  typeof (Buffer.prototype as Latin1Slicing).latin1Slice === 'function'
    ? (buf, start, end) => (buf as Latin1Slicing).latin1Slice!(start, end)
    : (buf, start, end) => buf.toString('latin1', start, end)

/** Decodes bytes as UTF-8 only when re-encoding the string gives the same bytes back. */
function exactUtf8(bytes: Buffer): string | undefined {
  // Valid UTF-8 decodes and re-encodes to the same bytes; the native check avoids the round trip on every string.
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined
}

// ---------------------------------------------------------------------------------------------
// Decoding

export type DecodeOptions = {
  /**
   * Accept what a JS object cannot reproduce: duplicate keys (the last value wins, at the first
   * key's position, as in amqplib), keys that are not UTF-8 (decoded with U+FFFD) and integer-like
   * keys out of ascending order (JS objects enumerate those first). The table is then not
   * byte-exact. Default false: such input throws.
   */
  lossy?: boolean
}

/**
 * Decodes the contents of a field table (the bytes after its 4-byte length, as amqplib's
 * `decodeFields` receives them). Without `lossy`, success guarantees that encodeTypedTable gives the
 * same bytes back; anything else throws FieldTableError, as do truncation and unknown tags always.
 */
export function decodeTypedTable(buf: Buffer, options: DecodeOptions = {}): TypedTable {
  return new Decoder(buf, options.lossy ?? false).table(0, buf.length, 0)
}

/** decodeTypedTable, plus the keys of the headers it kept as TooDeepValues (undefined when none were). */
function decodeReporting(buf: Buffer, lossy: boolean): { table: TypedTable; tooDeep: string[] | undefined } {
  const decoder = new Decoder(buf, lossy)
  const table = decoder.table(0, buf.length, 0)
  return { table, tooDeep: decoder.tooDeep }
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,9})$/

class Decoder {
  private offset = 0
  /** Keys and indexes from the root to the value being read; turned into text only for an error message. */
  private readonly trail: (string | number)[] = []
  /** Top-level keys kept as TooDeepValues, in wire order. */
  tooDeep: string[] | undefined

  constructor(
    private readonly buf: Buffer,
    private readonly lossy: boolean,
  ) {}

  /** `table["x-death"][0]["count"]`: where in the table a problem is. */
  private path(): string {
    let text = 'table'
    for (const step of this.trail) text += typeof step === 'number' ? `[${step}]` : `[${JSON.stringify(step)}]`
    return text
  }

  table(start: number, end: number, depth: number): TypedTable {
    const result: TypedTable = {}
    const wireOrder: string[] = []
    let hasIndexKey = false
    this.offset = start
    while (this.offset < end) {
      const keyLength = this.uint8(end, ': key length')
      const at = this.advance(keyLength, end, ': key')
      const key = this.text(at, keyLength) ?? this.inexact(this.buf.toString('utf8', at, at + keyLength), () => `${this.path()}: key 0x${this.buf.toString('hex', at, at + keyLength)} is not valid UTF-8`)
      this.trail.push(key)
      if (Object.hasOwn(result, key)) this.inexact(key, () => `${this.path()}: duplicate key`)
      else wireOrder.push(key)
      // Only keys that start with a digit can be array indexes, which JS objects reorder.
      if (!hasIndexKey && keyLength > 0 && this.buf[at] <= 0x39 && this.buf[at] >= 0x30) hasIndexKey = ARRAY_INDEX.test(key) && Number(key) < 2 ** 32 - 1
      setOwn(result, key, depth === 0 ? this.header(end, key) : this.value(end, depth))
      this.trail.pop()
    }
    if (hasIndexKey && Object.keys(result).some((key, i) => key !== wireOrder[i])) {
      this.inexact(result, () => `${this.path()}: integer-like keys (${wireOrder.filter((k) => ARRAY_INDEX.test(k)).join(', ')}) come out of order, which a JS object cannot keep`)
    }
    return result
  }

  /**
   * A top-level value. One that nests past MAX_DEPTH is kept as its raw bytes (TooDeepValue) instead of failing the
   * table: one hostile header must not cost the message all the others. Only tables and arrays can nest, so only
   * they pay for the try.
   */
  private header(end: number, key: string): TypedValue {
    const at = this.offset
    const tag = at < end ? this.buf[at] : -1
    if (tag !== TAG_F && tag !== TAG_A) return this.value(end, 0)
    const trail = this.trail.length
    try {
      return this.value(end, 0)
    } catch (error) {
      if (!(error instanceof TooDeepError)) throw error
      this.trail.length = trail
      // value() reserved the container's whole length before descending, so these bytes are known to be there.
      const start = at + 5
      const stop = start + this.buf.readUInt32BE(at + 1)
      this.offset = stop
      ;(this.tooDeep ??= []).push(key)
      return { t: tag === TAG_F ? 'F' : 'A', b64: this.buf.toString('base64', start, stop), tooDeep: true }
    }
  }

  private inexact<T>(value: T, problem: () => string): T {
    if (!this.lossy) throw new FieldTableError(problem())
    return value
  }

  private value(end: number, depth: number): TypedValue {
    const tag = String.fromCharCode(this.uint8(end, ': type tag'))
    if (isIntTag(tag)) {
      const width = INT_RANGES[tag][2]
      const at = this.advance(width, end, '')
      const signed = tag === 'b' || tag === 's' || tag === 'I'
      return { t: tag, v: signed ? this.buf.readIntBE(at, width) : this.buf.readUIntBE(at, width) }
    }
    switch (tag) {
      case 't': {
        const octet = this.buf[this.advance(1, end, '')]
        return octet === 0 || octet === 1 ? { t: 't', v: octet === 1 } : { t: 't', b64: Buffer.of(octet).toString('base64') }
      }
      case 'l':
      case 'T': {
        const at = this.advance(8, end, '')
        // Both words fit a double exactly below 2^53 (counts, epoch seconds): skip BigInt for those.
        const high = tag === 'l' ? this.buf.readInt32BE(at) : this.buf.readUInt32BE(at)
        if (high > -0x200000 && high < 0x200000) return { t: tag, v: String(high * 0x100000000 + this.buf.readUInt32BE(at + 4)) }
        return { t: tag, v: (tag === 'l' ? this.buf.readBigInt64BE(at) : this.buf.readBigUInt64BE(at)).toString() }
      }
      case 'f':
      case 'd': {
        const width = tag === 'f' ? 4 : 8
        const at = this.advance(width, end, '')
        const raw = this.buf.subarray(at, at + width)
        const value = tag === 'f' ? raw.readFloatBE(0) : raw.readDoubleBE(0)
        if (Number.isNaN(value) && !raw.equals(CANONICAL_NAN[tag])) return { t: tag, b64: raw.toString('base64') }
        return { t: tag, v: numberToTyped(value) }
      }
      case 'D': {
        const at = this.advance(5, end, '')
        return { t: 'D', v: { places: this.buf[at], digits: this.buf.readUInt32BE(at + 1) } }
      }
      case 'S': {
        const size = this.uint32(end)
        const at = this.advance(size, end, '')
        const text = this.text(at, size)
        return text === undefined || text.includes('\u0000') ? { t: 'S', b64: this.buf.toString('base64', at, at + size) } : { t: 'S', v: text }
      }
      case 'x':
        return { t: 'x', b64: this.bytes(this.uint32(end), end, '').toString('base64') }
      case 'V':
        return { t: 'V' }
      case 'F': {
        const length = this.uint32(end)
        const start = this.advance(length, end, '')
        this.checkDepth(depth)
        const nested = this.table(start, start + length, depth + 1)
        this.offset = start + length
        return { t: 'F', v: nested }
      }
      case 'A': {
        const length = this.uint32(end)
        const start = this.advance(length, end, '')
        this.checkDepth(depth)
        const items: TypedValue[] = []
        this.offset = start
        while (this.offset < start + length) {
          this.trail.push(items.length)
          items.push(this.value(start + length, depth + 1))
          this.trail.pop()
        }
        return { t: 'A', v: items }
      }
      default:
        throw new FieldTableError(
          `${this.path()}: unknown type tag 0x${tag.charCodeAt(0).toString(16).padStart(2, '0')} at offset ${this.offset - 1}`,
        )
    }
  }

  /** The bytes as a string when they are exact UTF-8 (see exactUtf8); short ASCII, the usual case, is checked inline. */
  private text(at: number, size: number): string | undefined {
    const buf = this.buf
    if (size <= 256) {
      let ascii = true
      for (let i = at; i < at + size; i++) {
        if (buf[i] > 0x7f) {
          ascii = false
          break
        }
      }
      if (ascii) return latin1(buf, at, at + size)
    }
    return exactUtf8(buf.subarray(at, at + size))
  }

  private checkDepth(depth: number): void {
    if (depth >= MAX_DEPTH) throw new TooDeepError(`${this.path()}: nested deeper than ${MAX_DEPTH} levels`)
  }

  /** Reserves `size` bytes before `end` and returns where they start; `what` names them after the path. */
  private advance(size: number, end: number, what: string): number {
    const at = this.offset
    if (at + size > end) {
      throw new FieldTableError(`${this.path()}${what}: truncated, needs ${size} bytes at offset ${at} but only ${end - at} remain`)
    }
    this.offset = at + size
    return at
  }

  private uint8(end: number, what: string): number {
    return this.buf[this.advance(1, end, what)]
  }

  private uint32(end: number): number {
    return this.buf.readUInt32BE(this.advance(4, end, ': length'))
  }

  private bytes(size: number, end: number, what: string): Buffer {
    const at = this.advance(size, end, what)
    return this.buf.subarray(at, at + size)
  }
}

const CANONICAL_NAN = {
  f: (() => {
    const b = Buffer.alloc(4)
    b.writeFloatBE(Number.NaN)
    return b
  })(),
  d: (() => {
    const b = Buffer.alloc(8)
    b.writeDoubleBE(Number.NaN)
    return b
  })(),
} as const

function numberToTyped(value: number): number | NonFiniteOrNegativeZero {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Number.POSITIVE_INFINITY) return 'Infinity'
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity'
  if (Object.is(value, -0)) return '-0'
  return value
}

function typedToNumber(value: number | NonFiniteOrNegativeZero): number {
  return typeof value === 'number' ? value : value === '-0' ? -0 : Number(value)
}

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * Encodes a typed table to field-table contents (no length prefix), the exact inverse of
 * decodeTypedTable. Keys are written in property order. Throws FieldTableError on invalid input
 * rather than guessing, since typed tables also come back from the database.
 */
export function encodeTypedTable(table: TypedTable): Buffer {
  const out = new Writer()
  encodeTableInto(table, out, 0, 'table')
  return out.bytes()
}

/**
 * Encodes into one growing buffer: a replay encodes every header of every message it publishes, and a buffer per
 * key, length and value (joined at the end) cost more than the encoding itself.
 */
/** Up to this many characters, text is measured and copied in JavaScript when it is all ASCII (header keys, most values). */
const SHORT_TEXT = 64

/** UTF-8 length of `text` (Buffer.byteLength, without its C++ call for short ASCII text). */
function utf8ByteLength(text: string): number {
  if (text.length <= SHORT_TEXT) {
    let ascii = true
    for (let i = 0; i < text.length && ascii; i++) ascii = text.charCodeAt(i) < 0x80
    if (ascii) return text.length
  }
  return Buffer.byteLength(text, 'utf8')
}

class Writer {
  private buf = Buffer.allocUnsafe(1024)
  private pos = 0

  private ensure(size: number): void {
    if (this.pos + size <= this.buf.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + size))
    this.buf.copy(grown, 0, 0, this.pos)
    this.buf = grown
  }

  /** Reserves `size` bytes and returns where they start. */
  reserve(size: number): number {
    this.ensure(size)
    const at = this.pos
    this.pos += size
    return at
  }

  get buffer(): Buffer {
    return this.buf
  }

  get offset(): number {
    return this.pos
  }

  // Each reserves first: reserving may replace the buffer.
  u8(value: number): void {
    const at = this.reserve(1)
    this.buf[at] = value
  }

  u32(value: number): void {
    const at = this.reserve(4)
    this.buf.writeUInt32BE(value, at)
  }

  raw(bytes: Buffer): void {
    const at = this.reserve(bytes.length)
    bytes.copy(this.buf, at)
  }

  /** `length` is utf8ByteLength(text). Short ASCII text is copied here: a call into Buffer's C++ costs more. */
  utf8(text: string, length: number): void {
    const at = this.reserve(length)
    if (length === text.length && length <= SHORT_TEXT) {
      for (let i = 0; i < length; i++) this.buf[at + i] = text.charCodeAt(i)
    } else {
      this.buf.write(text, at, length, 'utf8')
    }
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}

function encodeTableInto(table: TypedTable, out: Writer, depth: number, path: string): void {
  if (table === null || typeof table !== 'object' || Array.isArray(table)) throw new FieldTableError(`${path}: expected a table object`)
  for (const key of Object.keys(table)) {
    const keyLength = utf8ByteLength(key)
    if (keyLength > 255) throw new FieldTableError(`${pathOf(path, key)}: key is longer than 255 bytes`)
    out.u8(keyLength)
    out.utf8(key, keyLength)
    encodeValueInto(table[key], out, depth, path, key)
  }
}

/** A value's path for error messages, built only when one is thrown (replays encode every header of every message). */
function pathOf(parent: string, key: string | number): string {
  return typeof key === 'number' ? `${parent}[${key}]` : `${parent}[${JSON.stringify(key)}]`
}

/** Tag, 4-byte length, bytes. */
function writeSized(out: Writer, tag: number, bytes: Buffer): void {
  out.u8(tag)
  out.u32(bytes.length)
  out.raw(bytes)
}

function invalidValue(value: TypedValue, path: string, expected: string): FieldTableError {
  return new FieldTableError(`${path}: '${value.t}' expects ${expected}, got ${describe(value)}`)
}

function encodeValueInto(value: TypedValue, out: Writer, depth: number, parent: string, key: string | number): void {
  if (value === null || typeof value !== 'object' || typeof value.t !== 'string' || value.t.length !== 1) {
    throw new FieldTableError(`${pathOf(parent, key)}: expected a typed value {t, v?, b64?}`)
  }
  // Latin-1: the tag is one byte whatever character the stored value names (an unknown one is refused below).
  const tag = value.t.charCodeAt(0) & 0xff
  const payload = 'b64' in value ? fromBase64(value.b64, pathOf(parent, key)) : undefined

  if (isIntTag(value.t)) {
    const [min, max, width] = INT_RANGES[value.t]
    const v = 'v' in value ? value.v : undefined
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw invalidValue(value, pathOf(parent, key), `an integer in [${min}, ${max}]`)
    out.u8(tag)
    const at = out.reserve(width)
    if (min < 0) out.buffer.writeIntBE(v, at, width)
    else out.buffer.writeUIntBE(v, at, width)
    return
  }
  switch (value.t) {
    case 't':
      if (payload) {
        if (payload.length !== 1) throw invalidValue(value, pathOf(parent, key), 'a 1-byte b64 payload')
        out.u8(tag)
        out.raw(payload)
      } else if ('v' in value && typeof value.v === 'boolean') {
        out.u8(tag)
        out.u8(value.v ? 1 : 0)
      } else throw invalidValue(value, pathOf(parent, key), 'a boolean')
      return
    case 'l':
    case 'T': {
      const signed = value.t === 'l'
      const text = 'v' in value ? value.v : undefined
      // Up to 15 characters is exact as a double: no BigInt, of which a replay would make a few per message.
      if (typeof text === 'string' && text.length <= 15 && DECIMAL.test(text)) {
        const n = Number(text)
        if (signed || n >= 0) {
          out.u8(tag)
          const at = out.reserve(8)
          const high = Math.floor(n / 2 ** 32)
          out.buffer.writeInt32BE(high, at)
          out.buffer.writeUInt32BE(n - high * 2 ** 32, at + 4)
          return
        }
      }
      const v = typeof text === 'string' && DECIMAL.test(text) ? BigInt(text) : undefined
      if (v === undefined || (signed ? v < INT64_MIN || v > INT64_MAX : v < 0n || v > UINT64_MAX)) {
        throw invalidValue(value, pathOf(parent, key), signed ? 'a decimal string in [-2^63, 2^63-1]' : 'a decimal string in [0, 2^64-1]')
      }
      out.u8(tag)
      const at = out.reserve(8)
      if (signed) out.buffer.writeBigInt64BE(v, at)
      else out.buffer.writeBigUInt64BE(v, at)
      return
    }
    case 'f':
    case 'd': {
      const width = value.t === 'f' ? 4 : 8
      if (payload) {
        if (payload.length !== width) throw invalidValue(value, pathOf(parent, key), `a ${width}-byte b64 payload`)
        out.u8(tag)
        out.raw(payload)
        return
      }
      const raw = 'v' in value ? value.v : undefined
      const valid = typeof raw === 'number' ? Number.isFinite(raw) : raw === 'NaN' || raw === 'Infinity' || raw === '-Infinity' || raw === '-0'
      if (raw === undefined || !valid) throw invalidValue(value, pathOf(parent, key), 'a finite number or "NaN", "Infinity", "-Infinity", "-0"')
      const n = typedToNumber(raw)
      // writeFloatBE would silently round a number that is not exactly a float32.
      if (value.t === 'f' && !Number.isNaN(n) && !Object.is(Math.fround(n), n)) throw invalidValue(value, pathOf(parent, key), 'a number exactly representable as float32')
      out.u8(tag)
      const at = out.reserve(width)
      if (width === 4) out.buffer.writeFloatBE(n, at)
      else out.buffer.writeDoubleBE(n, at)
      return
    }
    case 'D': {
      const v: unknown = 'v' in value ? value.v : undefined
      const { places, digits } = (typeof v === 'object' && v !== null ? v : {}) as Partial<Record<'places' | 'digits', unknown>>
      if (!isIntegerIn(places, 0, 0xff) || !isIntegerIn(digits, 0, 0xffffffff)) throw invalidValue(value, pathOf(parent, key), '{places: 0..255, digits: 0..2^32-1}')
      out.u8(tag)
      out.u8(places)
      out.u32(digits)
      return
    }
    case 'S':
      if (payload) writeSized(out, tag, payload)
      else if ('v' in value && typeof value.v === 'string') {
        const length = utf8ByteLength(value.v)
        out.u8(tag)
        out.u32(length)
        out.utf8(value.v, length)
      } else throw invalidValue(value, pathOf(parent, key), 'a string or a b64 payload')
      return
    case 'x':
      if (!payload) throw invalidValue(value, pathOf(parent, key), 'a b64 payload')
      writeSized(out, tag, payload)
      return
    case 'V':
      out.u8(tag)
      return
    case 'F':
    case 'A': {
      // A TooDeepValue: the contents as received, never decoded, so never checked against MAX_DEPTH either.
      if ('b64' in value) {
        writeSized(out, tag, payload as Buffer)
        return
      }
      const path = pathOf(parent, key)
      if (depth >= MAX_DEPTH) throw new FieldTableError(`${path}: nested deeper than ${MAX_DEPTH} levels`)
      if (value.t === 'A' && !Array.isArray(value.v)) throw invalidValue(value, path, 'an array of typed values')
      if (value.t === 'F' && (typeof value.v !== 'object' || value.v === null || Array.isArray(value.v))) throw invalidValue(value, path, 'a table object')
      out.u8(tag)
      // The length goes before the contents: reserve it, encode, then fill it in.
      const lengthAt = out.reserve(4)
      const start = out.offset
      if (value.t === 'A') value.v.forEach((item, i) => encodeValueInto(item, out, depth + 1, path, i))
      else encodeTableInto(value.v, out, depth + 1, path)
      out.buffer.writeUInt32BE(out.offset - start, lengthAt)
      return
    }
    default:
      throw new FieldTableError(`${pathOf(parent, key)}: unknown type tag ${JSON.stringify((value as { t: unknown }).t)}`)
  }
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

// Buffer.from(…, 'base64') skips bad characters silently; stored payloads must fail loudly instead.
function fromBase64(b64: unknown, path: string): Buffer {
  if (typeof b64 !== 'string' || !BASE64.test(b64)) throw new FieldTableError(`${path}: b64 is not canonical base64`)
  return Buffer.from(b64, 'base64')
}

function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

// ---------------------------------------------------------------------------------------------
// Views

/**
 * A header value as the normaliser sees it: lossy but convenient (the exact typed form is stored separately). Defined
 * with the codec that produces it, so the broker layer needs nothing from the domains built on it.
 */
export type PlainValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | Date
  | Buffer
  | PlainValue[]
  | { [key: string]: PlainValue }

/** Convenient, lossy JS values for the normaliser (see PlainValue). */
export function toPlain(value: TypedValue): PlainValue {
  switch (value.t) {
    case 't':
      return 'v' in value ? value.v : fromBase64(value.b64, 't')[0] !== 0
    case 'b':
    case 'B':
    case 's':
    case 'u':
    case 'I':
    case 'i':
      return value.v
    case 'l': {
      const n = BigInt(value.v)
      return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n
    }
    case 'T':
      return new Date(Number(BigInt(value.v)) * 1000)
    case 'f':
    case 'd':
      return 'v' in value ? typedToNumber(value.v) : Number.NaN
    case 'D':
      return Number(decimalToString(value.v))
    case 'S':
      return 'v' in value ? value.v : Buffer.from(value.b64, 'base64').toString('utf8')
    case 'x':
      return Buffer.from(value.b64, 'base64')
    case 'V':
      return null
    case 'F':
    case 'A':
      // Nothing is derived from a header too deep to decode: its bytes are all there is to see.
      if ('b64' in value) return Buffer.from(value.b64, 'base64')
      return value.t === 'F' ? typedTableToPlain(value.v) : value.v.map(toPlain)
  }
}

export function typedTableToPlain(table: TypedTable): { [key: string]: PlainValue } {
  const result: { [key: string]: PlainValue } = {}
  for (const key of Object.keys(table)) setOwn(result, key, toPlain(table[key]))
  return result
}

/** A value the public API cannot carry as plain JSON; `value` is always a string. */
export type ApiTypedValue = {
  /** `table-too-deep` and `array-too-deep`: a TooDeepValue, `value` the base64 of its undecoded contents. */
  type: 'int64' | 'timestamp' | 'decimal' | 'bytes' | 'float' | 'longstr-bytes' | 'double' | 'table-too-deep' | 'array-too-deep'
  value: string
}
export type ApiJsonValue = string | number | boolean | null | ApiTypedValue | ApiJsonValue[] | { [key: string]: ApiJsonValue }

/**
 * The HTTP API view: plain JSON where JSON holds the value exactly, `{type, value}` otherwise. Its switch lists the
 * same cases as toPlain's on purpose: each view names every AMQP type, so the compiler proves both exhaustive.
 * int64, timestamps and floats are always wrapped, so a header's JSON shape depends on its AMQP type
 * and never on its magnitude.
 */
export function toApiJson(value: TypedValue): ApiJsonValue {
  switch (value.t) {
    case 't':
      return toPlain(value) as boolean
    case 'b':
    case 'B':
    case 's':
    case 'u':
    case 'I':
    case 'i':
      return value.v
    case 'l':
      return { type: 'int64', value: value.v }
    case 'T':
      return { type: 'timestamp', value: secondsToIso(BigInt(value.v)) }
    case 'f':
      return { type: 'float', value: float32ToString('v' in value ? typedToNumber(value.v) : Number.NaN) }
    case 'd': {
      const n = 'v' in value ? typedToNumber(value.v) : Number.NaN
      return Number.isFinite(n) && !Object.is(n, -0) ? n : { type: 'double', value: numberToTyped(n) as string }
    }
    case 'D':
      return { type: 'decimal', value: decimalToString(value.v) }
    case 'S': {
      if ('v' in value) return value.v
      const text = exactUtf8(Buffer.from(value.b64, 'base64'))
      return text ?? { type: 'longstr-bytes', value: value.b64 }
    }
    case 'x':
      return { type: 'bytes', value: value.b64 }
    case 'V':
      return null
    case 'F':
    case 'A':
      if ('b64' in value) return { type: value.t === 'F' ? 'table-too-deep' : 'array-too-deep', value: value.b64 }
      return value.t === 'F' ? typedTableToApiJson(value.v) : value.v.map(toApiJson)
  }
}

export function typedTableToApiJson(table: TypedTable): { [key: string]: ApiJsonValue } {
  const result: { [key: string]: ApiJsonValue } = {}
  for (const key of Object.keys(table)) setOwn(result, key, toApiJson(table[key]))
  return result
}

function decimalToString({ places, digits }: { places: number; digits: number }): string {
  if (places === 0) return String(digits)
  const padded = String(digits).padStart(places + 1, '0')
  return `${padded.slice(0, -places)}.${padded.slice(-places)}`
}

/** Shortest decimal that reads back as the same float32 (String() would print the widened double). */
function float32ToString(value: number): string {
  if (!Number.isFinite(value) || Object.is(value, -0)) return numberToTyped(value) as string
  for (let precision = 1; precision < 9; precision++) {
    const candidate = Number(value.toPrecision(precision))
    if (Math.fround(candidate) === value) return String(candidate)
  }
  return String(value)
}

/**
 * ISO 8601 in the style of Date#toISOString, computed with BigInt so the whole unsigned 64-bit range
 * works (Date stops at year 275760); years past 9999 use the expanded "+YYYYYY" form.
 * Civil-from-days after Howard Hinnant's algorithm (https://howardhinnant.github.io/date_algorithms.html).
 */
export function secondsToIso(seconds: bigint): string {
  const days = seconds / 86400n
  const secondOfDay = seconds % 86400n
  const z = days + 719468n
  const era = z / 146097n
  const dayOfEra = z - era * 146097n
  const yearOfEra = (dayOfEra - dayOfEra / 1460n + dayOfEra / 36524n - dayOfEra / 146096n) / 365n
  const dayOfYear = dayOfEra - (365n * yearOfEra + yearOfEra / 4n - yearOfEra / 100n)
  const mp = (5n * dayOfYear + 2n) / 153n
  const day = dayOfYear - (153n * mp + 2n) / 5n + 1n
  const month = mp < 10n ? mp + 3n : mp - 9n
  const year = yearOfEra + era * 400n + (month <= 2n ? 1n : 0n)
  const two = (n: bigint) => n.toString().padStart(2, '0')
  const yearText = year <= 9999n ? year.toString().padStart(4, '0') : `+${year.toString().padStart(6, '0')}`
  const time = `${two(secondOfDay / 3600n)}:${two((secondOfDay / 60n) % 60n)}:${two(secondOfDay % 60n)}`
  return `${yearText}-${two(month)}-${two(day)}T${time}.000Z`
}

// ---------------------------------------------------------------------------------------------
// amqplib integration

/** A value exactly as amqplib 2.3.1's decodeFields returns it. */
export type AmqplibFieldValue =
  | string
  | number
  | boolean
  | null
  | Buffer
  | { '!': 'timestamp'; value: number }
  | { '!': 'decimal'; value: { places: number; digits: number } }
  | AmqplibFieldValue[]
  | { [key: string]: AmqplibFieldValue }
export type AmqplibFieldTable = { [key: string]: AmqplibFieldValue }

/**
 * Global symbols, so that every copy of this module (a bundler may create several) agrees with the
 * one patch installed on amqplib's single codec instance.
 */
export const TYPED_TABLE: unique symbol = Symbol.for('lazarus.amqp.typed-table')
export const TYPED_TABLE_ERROR: unique symbol = Symbol.for('lazarus.amqp.typed-table-error')
const TYPED_TABLE_TOO_DEEP: unique symbol = Symbol.for('lazarus.amqp.typed-table-too-deep')
const TYPED_PUBLISH: unique symbol = Symbol.for('lazarus.amqp.typed-publish')
const CODEC_STOCK: unique symbol = Symbol.for('lazarus.amqp.codec-stock')

type PublishPayload = { encoded: Buffer; values: readonly unknown[] }
type Tagged = { [TYPED_TABLE]?: TypedTable; [TYPED_TABLE_ERROR]?: Error; [TYPED_TABLE_TOO_DEEP]?: readonly string[]; [TYPED_PUBLISH]?: PublishPayload }

/** Sealed headers for publishing; see withTypedHeaders. */
export type TypedPublishHeaders = Readonly<AmqplibFieldTable> & { readonly [TYPED_TABLE]: TypedTable }

/**
 * The typed table behind a headers (or arguments) object that came out of the patched amqplib, or
 * that withTypedHeaders built; undefined for objects from elsewhere. When getTypedHeadersError also
 * returns an error, the table is the lossy best effort (see DecodeOptions.lossy), or absent if the
 * bytes were malformed.
 */
export function getTypedHeaders(headers: unknown): TypedTable | undefined {
  return isObject(headers) ? (headers as Tagged)[TYPED_TABLE] : undefined
}

export function getTypedHeadersError(headers: unknown): Error | undefined {
  return isObject(headers) ? (headers as Tagged)[TYPED_TABLE_ERROR] : undefined
}

/**
 * The keys of the headers the typed table keeps as TooDeepValues, in wire order; undefined when there are none. Told
 * by the decoder, so that a consumer need not walk every table to find out.
 */
export function getTooDeepHeaders(headers: unknown): readonly string[] | undefined {
  return isObject(headers) ? (headers as Tagged)[TYPED_TABLE_TOO_DEEP] : undefined
}

/**
 * Headers to pass to publish() when they must go out exactly as typed. The object reads like the
 * headers a stock amqplib consumer would see. The patched encoder writes the typed form, so the plain
 * view is locked against edits that would otherwise be silently ignored: the object is sealed, its
 * nested values frozen, and publishing throws if a top-level value was replaced. (Sealed rather than
 * frozen: amqplib's publish() sets CC and BCC on an object inheriting from it, which read-only
 * properties would block.) Throws FieldTableError here, at the call site, if the table is invalid.
 */
export function withTypedHeaders(table: TypedTable): TypedPublishHeaders {
  const encoded = encodeTypedTable(table)
  const headers = typedTableToAmqplib(table)
  for (const key of Object.keys(headers)) deepFreeze(headers[key])
  Object.defineProperty(headers, TYPED_TABLE, { value: table })
  Object.defineProperty(headers, TYPED_PUBLISH, { value: { encoded, values: Object.values(headers) } satisfies PublishPayload })
  return Object.seal(headers) as TypedPublishHeaders
}

/** A typed table and its encoding, for a PublishHeadersSlot. Throws FieldTableError if the table is invalid. */
export type EncodedTable = { readonly table: TypedTable; readonly encoded: Buffer }

export function encodeForPublish(table: TypedTable): EncodedTable {
  return { table, encoded: encodeTypedTable(table) }
}

export type PublishHeadersSlot = {
  /** Makes `headers` carry `next`, and returns it: valid until the next load. */
  load(next: EncodedTable): TypedPublishHeaders
}

/**
 * One headers object for every publish of a publisher that encodes its own tables and never reads their plain view
 * (the replay executor). amqplib's publish() puts the headers under a fresh Object.create(headers), which turns the
 * object into a prototype: V8 copies its map the first time, so a new headers object per message cost a map copy per
 * message (figures: CHANGELOG.md). publish() encodes synchronously, so the slot may be loaded again as soon as it
 * returns. The object has no enumerable keys; getTypedHeaders returns the loaded table.
 */
export function publishHeadersSlot(): PublishHeadersSlot {
  const payload: PublishPayload & { table: TypedTable } = { encoded: Buffer.alloc(0), values: [], table: {} }
  const headers = {}
  Object.defineProperty(headers, TYPED_TABLE, { get: () => payload.table })
  Object.defineProperty(headers, TYPED_PUBLISH, { value: payload })
  const sealed = Object.seal(headers) as TypedPublishHeaders
  return {
    load(next) {
      payload.encoded = next.encoded
      payload.table = next.table
      return sealed
    },
  }
}

/** The subset of amqplib's lib/codec.js module that Lazarus replaces. */
export type AmqplibCodec = {
  encodeTable(buffer: Buffer, value: object, offset: number): number
  decodeFields(slice: Buffer): AmqplibFieldTable
}

export function isTypedCodecInstalled(codec: AmqplibCodec): boolean {
  return Object.hasOwn(codec, CODEC_STOCK)
}

/**
 * Replaces decodeFields and encodeTable on amqplib's codec module. Must run before amqplib's
 * lib/defs.js is first required, because defs copies both functions into locals when it loads.
 * Idempotent.
 *
 * decodeFields returns what stock amqplib returns, with the typed table and, if the bytes could not
 * be represented exactly, the reason attached under non-enumerable symbols (so are the keys of
 * headers nested too deep, see getTooDeepHeaders; where stock amqplib's recursion overflows on one,
 * that header reads as its bytes instead of the connection closing). encodeTable writes the
 * typed bytes for objects from withTypedHeaders and defers to stock amqplib for everything else.
 */
export function installTypedCodec(codec: AmqplibCodec): void {
  if (isTypedCodecInstalled(codec)) return
  const stock = { encodeTable: codec.encodeTable, decodeFields: codec.decodeFields }

  const decodeFields = (slice: Buffer): AmqplibFieldTable => {
    let typed: TypedTable | undefined
    let tooDeep: string[] | undefined
    let problem: unknown
    try {
      ;({ table: typed, tooDeep } = decodeReporting(slice, false))
    } catch (error) {
      problem = error
      try {
        ;({ table: typed, tooDeep } = decodeReporting(slice, true))
      } catch {
        // Malformed bytes: stock amqplib decides whether they are fatal, as it always did.
      }
    }
    const fields = !typed ? stock.decodeFields(slice) : tooDeep ? plainViewOfDeep(slice, typed, stock.decodeFields) : typedTableToAmqplib(typed)
    if (typed) Object.defineProperty(fields, TYPED_TABLE, { value: typed, configurable: true })
    if (problem) Object.defineProperty(fields, TYPED_TABLE_ERROR, { value: problem, configurable: true })
    if (tooDeep) Object.defineProperty(fields, TYPED_TABLE_TOO_DEEP, { value: tooDeep, configurable: true })
    return fields
  }

  const encodeTable = (buffer: Buffer, value: object, offset: number): number => {
    if (!isObject(value) || !(value as Tagged)[TYPED_PUBLISH]) return stock.encodeTable(buffer, value, offset)
    const body = typedPublishBody(value, stock.encodeTable)
    if (offset + 4 + body.length > buffer.length) {
      // Same error as stock amqplib, which callers may already handle.
      throw new RangeError(`Encoded field table (headers or arguments) exceeds the ${buffer.length} byte encoding buffer`)
    }
    buffer.writeUInt32BE(body.length, offset)
    body.copy(buffer, offset + 4)
    return 4 + body.length
  }

  Object.defineProperty(codec, CODEC_STOCK, { value: stock })
  codec.decodeFields = decodeFields
  codec.encodeTable = encodeTable
}

/**
 * The plain view of a table holding a TooDeepValue: stock amqplib's own where it can build one (its decoder recurses
 * without limit and overflows the stack some thousands of levels down, which would close the whole connection and
 * redeliver the message to do it again), else the typed view, which gives such a header as its bytes.
 */
function plainViewOfDeep(slice: Buffer, typed: TypedTable, stockDecodeFields: AmqplibCodec['decodeFields']): AmqplibFieldTable {
  try {
    return stockDecodeFields(slice)
  } catch {
    return typedTableToAmqplib(typed)
  }
}

/**
 * amqplib's publish() passes `Object.create(headers)` with CC and BCC set on it, and stock
 * encodeTable's for-in writes those own keys first. Keep that layout: encode such extras the stock
 * way, then append the typed keys they do not shadow.
 */
function typedPublishBody(value: object, stockEncodeTable: AmqplibCodec['encodeTable']): Buffer {
  const extras: Record<string, unknown> = {}
  let hasExtras = false
  let layer = value
  while (!Object.hasOwn(layer, TYPED_PUBLISH)) {
    for (const key of Object.keys(layer)) {
      const v = (layer as Record<string, unknown>)[key]
      if (v !== undefined && !Object.hasOwn(extras, key)) {
        setOwn(extras, key, v)
        hasExtras = true
      }
    }
    layer = Object.getPrototypeOf(layer) as object
  }
  const { encoded, values } = (layer as Tagged)[TYPED_PUBLISH] as PublishPayload
  if (Object.values(layer).some((v, i) => !Object.is(v, values[i]))) {
    throw new TypeError('Headers from withTypedHeaders() were changed after wrapping; change the typed table and wrap it again')
  }
  if (!hasExtras) return encoded

  const scratch = Buffer.alloc(65536)
  const size = stockEncodeTable(scratch, extras, 0)
  const merged = decodeTypedTable(scratch.subarray(4, size))
  const typed = decodeTypedTable(encoded)
  for (const key of Object.keys(typed)) if (!Object.hasOwn(merged, key)) setOwn(merged, key, typed[key])
  return encodeTypedTable(merged)
}

/** Mirrors amqplib 2.3.1's decodeFields value for value, including its plain assignment of keys. */
export function typedTableToAmqplib(table: TypedTable): AmqplibFieldTable {
  const fields: AmqplibFieldTable = {}
  for (const key of Object.keys(table)) fields[key] = typedToAmqplib(table[key])
  return fields
}

function typedToAmqplib(value: TypedValue): AmqplibFieldValue {
  switch (value.t) {
    case 'l':
      return Number(BigInt(value.v))
    case 'T':
      return { '!': 'timestamp', value: Number(BigInt(value.v)) }
    case 'D':
      return { '!': 'decimal', value: { places: value.v.places, digits: value.v.digits } }
    case 'S':
      return 'v' in value ? value.v : Buffer.from(value.b64, 'base64').toString('utf8')
    case 'F':
    case 'A':
      // Stock amqplib would build nested objects (when its recursion survives); the bytes are the honest fallback.
      if ('b64' in value) return Buffer.from(value.b64, 'base64')
      return value.t === 'F' ? typedTableToAmqplib(value.v) : value.v.map(typedToAmqplib)
    default:
      return toPlain(value) as AmqplibFieldValue
  }
}

function deepFreeze<T>(value: T): T {
  // Buffers cannot be frozen (their bytes are indexed properties); they are copies anyway.
  if (!isObject(value) || Buffer.isBuffer(value) || Object.isFrozen(value)) return value
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  return Object.freeze(value)
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null
}
