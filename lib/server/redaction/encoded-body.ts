import 'server-only'
import { brotliCompressSync, brotliDecompressSync, deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync, inflateSync } from 'node:zlib'

/**
 * Decompression stops here: a gzip bomb (a few KiB that inflate to gigabytes) must not exhaust the export's memory.
 * A body that inflates further is masked whole, never exported as it is.
 */
export const MAX_DECODED_BODY_BYTES = 64 * 1024 * 1024

/** What a body with a content encoding became. `masked` says why the whole body was replaced (null when it was not). */
export type EncodedBodyRedaction = { bytes: Buffer; text: string | null; redacted: boolean; masked: string | null }

/** What replaces a body that could not be decoded, or inflated past the cap. */
export const MASKED_BODY = '[REDACTED:body]'

type Codec = { decode(bytes: Buffer): Buffer; encode(bytes: Buffer): Buffer }

const limit = { maxOutputLength: MAX_DECODED_BODY_BYTES }

/** Deflate as RFC 9110 means it (zlib-wrapped), or raw deflate as some publishers send it; re-encoded the same way. */
function deflateCodec(): Codec {
  let raw = false
  return {
    decode(bytes) {
      try {
        return inflateSync(bytes, limit)
      } catch (error) {
        if (isTooLarge(error)) throw error
        raw = true
        return inflateRawSync(bytes, limit)
      }
    },
    encode: (bytes) => (raw ? deflateRawSync(bytes) : deflateSync(bytes)),
  }
}

const CODECS: Record<string, () => Codec> = {
  gzip: () => ({ decode: (bytes) => gunzipSync(bytes, limit), encode: (bytes) => gzipSync(bytes) }),
  'x-gzip': () => CODECS.gzip(),
  deflate: deflateCodec,
  br: () => ({ decode: (bytes) => brotliDecompressSync(bytes, limit), encode: (bytes) => brotliCompressSync(bytes) }),
  base64: () => ({
    decode: (bytes) => {
      const text = bytes.toString('latin1').replace(/\s+/g, '')
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new Error('not base64')
      return Buffer.from(text, 'base64')
    },
    encode: (bytes) => Buffer.from(bytes.toString('base64'), 'latin1'),
  }),
}

/** Values that leave the bytes as they are (some publishers put the charset in contentEncoding). */
const IDENTITY = new Set(['', 'identity', 'utf-8', 'utf8', '7bit', '8bit', 'binary', 'us-ascii', 'ascii', 'iso-8859-1', 'latin1'])

/**
 * The codecs a contentEncoding names, in the order they were applied: `gzip`, `gzip, base64` (HTTP's list form) and
 * Spring AMQP's `gzip:UTF-8` (its compressing post-processors append the original encoding) are all understood.
 * Null when there is nothing to decode, or an encoding Lazarus has no decoder for.
 */
export function codecsOf(contentEncoding: unknown): Codec[] | null {
  if (typeof contentEncoding !== 'string') return null
  const names = contentEncoding
    .toLowerCase()
    .split(',')
    .map((part) => part.split(':')[0].trim())
    .filter((name) => !IDENTITY.has(name))
  if (names.length === 0 || names.some((name) => !Object.hasOwn(CODECS, name))) return null
  return names.map((name) => CODECS[name]())
}

const isTooLarge = (error: unknown) => error instanceof RangeError || (error as { code?: string } | null)?.code === 'ERR_BUFFER_TOO_LARGE'

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** The export's encoding of decoded content: JSON and text are redacted by structure and pattern, the rest masked in place. */
function kindOf(bytes: Buffer): 'text' | 'binary' {
  let text: string
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    return 'binary'
  }
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? 'binary' : 'text'
}

/**
 * Decodes a body through its content encodings, redacts what it holds and encodes it again the same way. Nothing
 * redacted: the stored bytes themselves. A body that does not decode (corrupt, truncated) or inflates past
 * MAX_DECODED_BODY_BYTES is masked whole and flagged: what cannot be read cannot be shown to be clean.
 */
export function redactEncodedBody(
  bytes: Buffer,
  contentEncoding: unknown,
  redact: (decoded: Buffer, encoding: 'text' | 'binary') => Buffer,
): EncodedBodyRedaction | null {
  const codecs = codecsOf(contentEncoding)
  if (codecs === null || bytes.length === 0) return null
  const label = String(contentEncoding).trim()
  const masked = (why: string): EncodedBodyRedaction => ({ bytes: Buffer.from(MASKED_BODY, 'utf8'), text: MASKED_BODY, redacted: true, masked: why })
  let decoded = bytes
  try {
    for (let i = codecs.length - 1; i >= 0; i--) decoded = codecs[i].decode(decoded)
  } catch (error) {
    if (isTooLarge(error)) return masked(`the body decodes (${label}) to more than ${MAX_DECODED_BODY_BYTES / 1024 / 1024} MiB`)
    return masked(`the body cannot be decoded as ${label}`)
  }
  const clean = redact(decoded, kindOf(decoded))
  if (clean === decoded) return { bytes, text: textView(bytes), redacted: false, masked: null }
  let encoded = clean
  for (const codec of codecs) encoded = codec.encode(encoded)
  return { bytes: encoded, text: textView(encoded), redacted: true, masked: null }
}

/** The UTF-8 view an export shows beside the bytes: null for anything that is not text (compressed bytes). */
function textView(bytes: Buffer): string | null {
  return kindOf(bytes) === 'text' ? bytes.toString('utf8') : null
}
