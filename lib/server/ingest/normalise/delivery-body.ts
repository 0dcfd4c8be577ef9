import 'server-only'

/** Bodies above this are not parsed: a failure record never needs a multi-megabyte JSON walk. */
export const MAX_PARSED_BODY_BYTES = 4 * 1024 * 1024

export type ParsedJson = { value: unknown }

/** Content encodings that leave the bytes as they are (some publishers put the charset here). */
const IDENTITY_ENCODINGS = ['identity', 'utf-8', 'utf8', '7bit', '8bit', 'binary']

export type DeliveryBody = {
  bytes: Buffer
  /** The body as UTF-8, or null when it is compressed, not valid UTF-8, or too large. */
  text(): string | null
  /** The body as JSON, or null when it is not JSON (invalid, binary, compressed or too large). */
  json(): ParsedJson | null
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

export function decodeStrictUtf8(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return null
  }
}

export function parseJsonText(text: string | null): ParsedJson | null {
  if (text === null) return null
  const trimmed = text.replace(/^\uFEFF/, '').trim()
  if (trimmed === '' || trimmed.length > MAX_PARSED_BODY_BYTES) return null
  try {
    return { value: JSON.parse(trimmed) as unknown }
  } catch {
    return null
  }
}

/**
 * Lazy, memoised views of the body; nothing is decoded unless a rule or framework asks. `parsed`: the value a caller
 * already parsed from the same bytes as strict UTF-8 (buildRow's classifyBody), used when this view would parse them
 * too (identity encoding, within the size limit), so a JSON body is parsed once per message, not twice.
 */
export function readBody(body: unknown, contentEncoding: unknown, parsed?: unknown): DeliveryBody {
  const bytes = Buffer.isBuffer(body) ? body : body instanceof Uint8Array ? Buffer.from(body) : Buffer.alloc(0)
  const encoding = typeof contentEncoding === 'string' ? contentEncoding.trim().toLowerCase() : ''
  // Anything but an identity encoding (gzip, deflate, br…) makes the bytes unreadable without decompressing.
  const encoded = encoding !== '' && !IDENTITY_ENCODINGS.includes(encoding)
  let text: string | null | undefined
  const reusable = !encoded && bytes.length <= MAX_PARSED_BODY_BYTES && isParsedJson(parsed)
  let json: ParsedJson | null | undefined = reusable ? parsed : undefined
  return {
    bytes,
    text() {
      if (text === undefined) text = encoded || bytes.length > MAX_PARSED_BODY_BYTES ? null : decodeStrictUtf8(bytes)
      return text
    },
    json() {
      if (json === undefined) json = parseJsonText(this.text())
      return json
    },
  }
}

function isParsedJson(value: unknown): value is ParsedJson {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, 'value')
}
