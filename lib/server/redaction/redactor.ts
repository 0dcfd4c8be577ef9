import 'server-only'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import { REDACTION_DETECTORS, type RedactionDetector, type RedactionRuleKind } from '@/lib/shared/schemas/redaction'
import { DETECTORS, HintText, isCardNumber, mask, type Detector } from './detectors'
import { redactEncodedBody, type EncodedBodyRedaction } from './encoded-body'
import { redactJsonText, type JsonRedactionHooks } from './json-text'
import { compileKeyMatcher, type KeyMatcher } from './key-matcher'
import { compileUserPattern, replaceUserPattern, type UserPattern } from './user-pattern'

export type RedactionRule = { kind: RedactionRuleKind; value: string; enabled: boolean }

/** What a value under a secret key becomes, in JSON, headers and text alike. */
export const REDACTED = '[REDACTED]'

/**
 * Applies the redaction rules to everything an export or ticket shows. Every function returns its input itself
 * (the same string, Buffer or object) when nothing was redacted, so unaffected content stays byte-exact and cheap.
 */
export type Redactor = {
  /** False when no rule is enabled: callers may skip redaction altogether. */
  readonly active: boolean
  isSecretKey(key: string): boolean
  /** Free text: error messages, stacks, entity keys, header strings, bodies. JSON text keeps its exact formatting. */
  text(text: string): string
  /** A stored body: JSON and text by structure and pattern; binary bodies get same-length masks so framing survives. */
  body(bytes: Buffer, encoding: string): Buffer
  /** A text or JSON body already decoded from UTF-8: the redacted text (the same string when nothing changed). */
  bodyText(text: string, encoding: string): string
  /** `body`, plus the redacted body's UTF-8 text view (null for binary bodies) without decoding it twice. */
  bodyWithText(bytes: Buffer, encoding: string): { bytes: Buffer; text: string | null }
  /**
   * A body stored with an AMQP content encoding (gzip, deflate, br, base64, or a list of them): decoded, redacted and
   * encoded again. Null when the encoding is none Lazarus decodes (the caller redacts the bytes as they are).
   */
  encodedBody(bytes: Buffer, contentEncoding: unknown): EncodedBodyRedaction | null
  /** Parsed JSON (AMQP properties, API header views). */
  json<T>(value: T): T
  typedTable(table: TypedTable): TypedTable
  typedValue(value: TypedValue): TypedValue
}

type Mode = 'replace' | 'mask'

// Past these, nesting is hostile, not data: the walk stops (the JSON scan gives up and text rules apply instead).
const MAX_NESTING = 512
const MAX_JSON_IN_STRING_DEPTH = 6
const MAX_VALUE_CHARS = 8192

/** The value of a key=value pair: a quoted string, or the rest of the line up to & ; , (query strings, cookies, log lines). */
const ASSIGNED_VALUE = new RegExp(
  String.raw`"(?:[^"\\\r\n]|\\.){0,${MAX_VALUE_CHARS}}"|'[^'\r\n]{0,${MAX_VALUE_CHARS}}'|[^\r\n&;,"'<>]{0,${MAX_VALUE_CHARS}}[^\s&;,"'<>]`,
  'y',
)
/** <password>…</password> (any namespace prefix); the element's text is redacted, the tags stay. */
const XML_ELEMENT = /<([A-Za-z_][\w.:-]{0,63})(\s[^<>]{0,1000})?>([^<]{1,65536})<\/\1\s*>/g
// "TokenExpiredException: token expired" is an exception's name, not a credential.
const EXCEPTION_NAME = /(?:Exception|Error)$/
/** The first base64 character of text starting with '{', '[', a space, \t, \n, \r or a UTF-8 byte order mark. */
const BASE64_JSON_FIRST = 'eWICD7'
const BASE64_TEXT = /^[A-Za-z0-9+/_-]+={0,2}$/
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return null
  }
}

const isBlank = (c: number) => c === 32 || c === 9
/** [A-Za-z0-9_-] */
const isKeyChar = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45
const isKeyStart = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95

function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/**
 * Compiles the rules. An enabled pattern that does not compile throws PatternCompileError: a rule the operator relies
 * on is never skipped in silence (exports and tickets refuse to run instead, see loadRedactor).
 */
export function createRedactor(rules: readonly RedactionRule[]): Redactor {
  const set = new RuleSet(rules)
  return {
    active: set.active,
    isSecretKey: (key) => set.keys.matches(key),
    text: (text) => set.textAt(text, 0, 'replace'),
    body: (bytes, encoding) => set.body(bytes, encoding).bytes,
    bodyWithText: (bytes, encoding) => set.body(bytes, encoding),
    bodyText: (text, encoding) => set.bodyText(text, encoding),
    encodedBody: (bytes, contentEncoding) => (set.active ? redactEncodedBody(bytes, contentEncoding, (decoded, encoding) => set.body(decoded, encoding).bytes) : null),
    json: <T>(value: T) => (set.active ? (set.json(value, 0) as T) : value),
    typedTable: (table) => (set.active ? set.typedTable(table, 0) : table),
    typedValue: (value) => (set.active ? set.typedValue(value, 0) : value),
  }
}

const KEY_CACHE_LIMIT = 20_000
const SHORT_TEXT_CHARS = 160
const SHORT_TEXT_CACHE = 10_000
/** Stack traces and error messages repeat within a group; up to this long they are remembered too, fewer of them. */
const LONG_TEXT_CHARS = 4096
const LONG_TEXT_CACHE = 1_000

/** The compiled rules. A class rather than closures: redaction runs per string of every exported row. */
class RuleSet implements JsonRedactionHooks {
  readonly keys: KeyMatcher
  readonly active: boolean
  readonly secretValue = `"${REDACTED}"`
  private readonly hasKeys: boolean
  private readonly detectors: Detector[]
  private readonly cards: boolean
  private readonly patterns: UserPattern[]
  /** Per mode, one replace callback per detector, made once: a closure per call would cost more than most matches. */
  private readonly replacers: Record<Mode, ((match: string, ...rest: unknown[]) => string)[]>
  private readonly patternReplacers: Record<Mode, (length: number) => string> = {
    replace: () => REDACTED,
    mask: (length) => '*'.repeat(length),
  }
  // Key names repeat from message to message: their own redaction (an e-mail address as a key) is looked up once.
  private readonly keyTexts = new Map<string, string>()

  constructor(rules: readonly RedactionRule[]) {
    const enabled = rules.filter((r) => r.enabled)
    this.keys = compileKeyMatcher(enabled.filter((r) => r.kind === 'key').map((r) => r.value))
    this.hasKeys = enabled.some((r) => r.kind === 'key')
    const detectorNames = new Set(enabled.filter((r) => r.kind === 'detector').map((r) => r.value))
    this.detectors = REDACTION_DETECTORS.filter((name) => detectorNames.has(name)).map((name) => DETECTORS[name as RedactionDetector])
    this.cards = detectorNames.has('card-number')
    this.patterns = enabled.filter((r) => r.kind === 'pattern').map((r) => compileUserPattern(r.value))
    this.active = this.hasKeys || this.detectors.length > 0 || this.patterns.length > 0
    this.replacers = { replace: this.detectors.map((d) => detectorReplacer(d, 'replace')), mask: this.detectors.map((d) => detectorReplacer(d, 'mask')) }
  }

  // JsonRedactionHooks
  isSecretKey(key: string): boolean {
    return this.keys.matches(key)
  }
  redactString(value: string, depth: number): string {
    return this.textAt(value, depth, 'replace')
  }
  redactKey(key: string): string {
    let clean = this.keyTexts.get(key)
    if (clean === undefined) {
      clean = this.textAt(key, MAX_JSON_IN_STRING_DEPTH, 'replace')
      if (this.keyTexts.size >= KEY_CACHE_LIMIT) this.keyTexts.clear()
      this.keyTexts.set(key, clean)
    }
    return clean
  }
  redactNumber(raw: string): string | null {
    return this.isCard(raw) ? `"${mask('card')}"` : null
  }

  private isCard(digits: string): boolean {
    return this.cards && digits.length >= 13 && digits.length <= 19 && isCardNumber(digits)
  }

  /**
   * Short strings repeat from message to message (header values such as exception types, host names, queue names):
   * their redaction is remembered. Long ones (stacks, bodies) are mostly unique and would only fill the cache.
   */
  private readonly shortTexts = new Map<string, string>()
  private readonly longTexts = new Map<string, string>()

  textAt(text: string, depth: number, mode: Mode): string {
    if (!this.active || text.length < 3) return text
    if (depth === 0 && mode === 'replace' && text.length <= LONG_TEXT_CHARS) {
      const short = text.length <= SHORT_TEXT_CHARS
      const cache = short ? this.shortTexts : this.longTexts
      let clean = cache.get(text)
      if (clean === undefined) {
        clean = this.redactText(text, depth, mode)
        if (cache.size >= (short ? SHORT_TEXT_CACHE : LONG_TEXT_CACHE)) cache.clear()
        cache.set(text, clean)
      }
      return clean
    }
    return this.redactText(text, depth, mode)
  }

  private redactText(text: string, depth: number, mode: Mode): string {
    if (mode === 'replace' && depth < MAX_JSON_IN_STRING_DEPTH && looksLikeJson(text)) {
      const json = redactJsonText(text, this, depth + 1)
      if (json !== null) return json
    }
    // Binary content (mask mode) arrives at the deepest level already; its base64 JSON is still looked into, once.
    if (depth < MAX_JSON_IN_STRING_DEPTH || (mode === 'mask' && depth === MAX_JSON_IN_STRING_DEPTH)) {
      const decoded = this.redactBase64Json(text, depth, mode)
      if (decoded !== null) return decoded
    }
    let out = text
    // Hints look at the original text: redaction only ever replaces what a detector found.
    const hint = new HintText(text)
    for (let i = 0; i < this.detectors.length; i++) {
      const detector = this.detectors[i]
      if (!detector.hint(hint)) continue
      detector.regex.lastIndex = 0
      out = out.replace(detector.regex, this.replacers[mode][i])
    }
    for (const pattern of this.patterns) out = replaceUserPattern(pattern, out, this.patternReplacers[mode])
    if (this.hasKeys) {
      out = this.redactAssignments(out, mode)
      if (out.includes('</')) out = this.redactXml(out, mode)
    }
    return out
  }

  /**
   * A string that is, as a whole, base64 (or base64url) of JSON: what a JWT-less API gateway, a "payload" header or a
   * message envelope carries. The JSON is redacted and encoded again in the same alphabet and padding; in mask mode
   * the whole string is masked, since a re-encoding would change its length. Null when the string is not that, or
   * holds nothing to redact.
   */
  private redactBase64Json(text: string, depth: number, mode: Mode): string | null {
    let a = 0
    while (a < text.length && text.charCodeAt(a) <= 32) a++
    let b = text.length
    while (b > a && text.charCodeAt(b - 1) <= 32) b--
    // The first base64 character of '{', '[', white space or a byte order mark.
    if (b - a < 12 || !BASE64_JSON_FIRST.includes(text[a])) return null
    const core = text.slice(a, b)
    if (!BASE64_TEXT.test(core)) return null
    const url = core.includes('-') || core.includes('_')
    if (url && (core.includes('+') || core.includes('/'))) return null
    const json = decodeUtf8(Buffer.from(core, url ? 'base64url' : 'base64'))
    if (json === null || !looksLikeJson(json)) return null
    const clean = redactJsonText(json, this, depth + 1) ?? this.redactText(json, depth + 1, 'replace')
    if (clean === json) return null
    if (mode === 'mask') return text.slice(0, a) + '*'.repeat(core.length) + text.slice(b)
    let encoded = Buffer.from(clean, 'utf8').toString(url ? 'base64url' : 'base64')
    const padded = core.endsWith('=')
    if (url && padded) encoded += '='.repeat((4 - (encoded.length % 4)) % 4)
    if (!url && !padded) encoded = encoded.replace(/=+$/, '')
    return text.slice(0, a) + encoded + text.slice(b)
  }

  body(bytes: Buffer, encoding: string): { bytes: Buffer; text: string | null } {
    if (encoding === 'binary') return { bytes: this.active ? this.maskBytes(bytes) : bytes, text: null }
    const text = bytes.toString('utf8')
    const clean = this.bodyText(text, encoding)
    return clean === text ? { bytes, text } : { bytes: Buffer.from(clean, 'utf8'), text: clean }
  }

  bodyText(text: string, encoding: string): string {
    if (!this.active || text.length === 0) return text
    return (encoding === 'json' ? redactJsonText(text, this, 0) : null) ?? this.textAt(text, 0, 'replace')
  }

  /** Binary content: the text rules over its Latin-1 view with same-length masks, so lengths and framing survive. */
  private maskBytes(bytes: Buffer): Buffer {
    const latin1 = bytes.toString('latin1')
    const clean = this.textAt(latin1, MAX_JSON_IN_STRING_DEPTH, 'mask')
    return clean === latin1 ? bytes : Buffer.from(clean, 'latin1')
  }

  /**
   * key=value, key: value and "key": "value" in plain text, for secret keys. Walks from separator to separator
   * (indexOf, no regex over the whole text) and reads the word before each; a harmless pair never hides the next one,
   * because the walk goes on right after its separator.
   */
  private redactAssignments(text: string, mode: Mode): string {
    const n = text.length
    let out = ''
    let copied = 0
    let colon = text.indexOf(':')
    let equals = text.indexOf('=')
    while (colon >= 0 || equals >= 0) {
      const sep = colon < 0 ? equals : equals < 0 ? colon : Math.min(colon, equals)
      if (sep === colon) colon = text.indexOf(':', sep + 1)
      else equals = text.indexOf('=', sep + 1)
      if (sep < copied) continue
      let j = sep - 1
      while (j >= 0 && isBlank(text.charCodeAt(j))) j--
      const quote = j >= 0 && (text.charCodeAt(j) === 34 || text.charCodeAt(j) === 39) ? text.charCodeAt(j) : 0
      if (quote) j--
      const keyEnd = j + 1
      while (j >= 0 && isKeyChar(text.charCodeAt(j)) && keyEnd - j <= 64) j--
      const keyStart = j + 1
      if (keyStart === keyEnd || !isKeyStart(text.charCodeAt(keyStart))) continue
      let before = keyStart - 1
      if (quote) {
        if (text.charCodeAt(before) !== quote) continue
        before--
      }
      // Inside a longer word, a dotted name (TokenService.java:42) or a dashed one: not a key.
      if (before >= 0 && (isKeyChar(text.charCodeAt(before)) || text.charCodeAt(before) === 46)) continue
      const key = text.slice(keyStart, keyEnd)
      if (!this.keys.matches(key) || EXCEPTION_NAME.test(key)) continue
      let valueStart = sep + 1
      while (valueStart < n && isBlank(text.charCodeAt(valueStart))) valueStart++
      ASSIGNED_VALUE.lastIndex = valueStart
      const value = ASSIGNED_VALUE.exec(text)?.[0]
      if (!value || value.startsWith('[REDACTED')) continue
      const quoted = value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]
      const inner = quoted ? value.slice(1, -1) : value
      out += text.slice(copied, valueStart) + (quoted ? value[0] : '') + masked(inner, mode, REDACTED) + (quoted ? value[0] : '')
      copied = valueStart + value.length
    }
    return copied === 0 ? text : out + text.slice(copied)
  }

  private redactXml(text: string, mode: Mode): string {
    XML_ELEMENT.lastIndex = 0
    return text.replace(XML_ELEMENT, (match: string, tag: string, attributes: string | undefined, inner: string) => {
      const local = tag.slice(tag.lastIndexOf(':') + 1)
      if (!this.keys.matches(tag) && !this.keys.matches(local)) return match
      return `<${tag}${attributes ?? ''}>${masked(inner, mode, REDACTED)}</${tag}>`
    })
  }

  json(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.textAt(value, 0, 'replace')
    if (typeof value === 'number') return Number.isInteger(value) && this.isCard(String(value)) ? mask('card') : value
    if (value === null || typeof value !== 'object' || depth > MAX_NESTING) return value
    if (Array.isArray(value)) {
      let out: unknown[] | null = null
      for (let i = 0; i < value.length; i++) {
        const clean = this.json(value[i], depth + 1)
        if (clean !== value[i]) (out ??= value.slice())[i] = clean
      }
      return out ?? value
    }
    // Copied only once something changes: most objects come back as they are.
    const record = value as Record<string, unknown>
    const keys = Object.keys(record)
    let out: Record<string, unknown> | null = null
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      const item = record[key]
      const clean = this.keys.matches(key) ? REDACTED : this.json(item, depth + 1)
      const cleanKey = this.redactKey(key)
      if (out === null && (clean !== item || cleanKey !== key)) out = copyOf(record, keys, i)
      if (out !== null) setOwn(out, cleanKey, clean)
    }
    return out ?? value
  }

  /**
   * Stored tables come from our own decoder, but the walk trusts no shape: anything that is not a well-formed typed
   * value (hand-written rows, older data) is walked as plain JSON, so its strings are redacted all the same.
   */
  /** Bytes carried as base64, masked to the same length; the value itself when nothing needed masking. */
  private maskBase64(value: TypedValue, b64: string, masked: (clean: string) => TypedValue): TypedValue {
    const bytes = Buffer.from(b64, 'base64')
    const clean = this.maskBytes(bytes)
    return clean === bytes ? value : masked(clean.toString('base64'))
  }

  typedValue(value: TypedValue, depth: number): TypedValue {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || typeof value.t !== 'string') return this.json(value, depth) as TypedValue
    const v = (value as { v?: unknown }).v
    const b64 = (value as { b64?: unknown }).b64
    // A table or array nested too deep to decode is kept as its raw bytes (TooDeepValue): masked in place like a byte
    // array, so the text it holds is redacted and its framing (lengths) survives.
    if ((value.t === 'F' || value.t === 'A') && typeof b64 === 'string') {
      return this.maskBase64(value, b64, (clean) => ({ ...value, b64: clean }) as TypedValue)
    }
    switch (value.t) {
      case 'S':
        if (typeof v === 'string') {
          const clean = this.textAt(v, 0, 'replace')
          return clean === v ? value : { t: 'S', v: clean }
        }
        if (typeof b64 === 'string') return this.maskBase64(value, b64, (clean) => ({ t: 'S', b64: clean }))
        break
      case 'x':
        if (typeof b64 === 'string') return this.maskBase64(value, b64, (clean) => ({ t: 'x', b64: clean }))
        break
      case 'l':
      case 'T':
        if (typeof v === 'string') return this.isCard(v.replace(/^-/, '')) ? { t: 'S', v: mask('card') } : value
        break
      case 'd':
        if (typeof v === 'number') return Number.isInteger(v) && this.isCard(String(v)) ? { t: 'S', v: mask('card') } : value
        break
      case 'F':
        if (depth > MAX_NESTING) return value
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
          const clean = this.typedTable(v as TypedTable, depth + 1)
          return clean === v ? value : { t: 'F', v: clean }
        }
        break
      case 'A':
        if (depth > MAX_NESTING) return value
        if (Array.isArray(v)) {
          let items: TypedValue[] | null = null
          for (let i = 0; i < v.length; i++) {
            const clean = this.typedValue(v[i] as TypedValue, depth + 1)
            if (clean !== v[i]) (items ??= (v as TypedValue[]).slice())[i] = clean
          }
          return items ? { t: 'A', v: items } : value
        }
        break
      default:
        if (typeof v !== 'string' && typeof v !== 'object') return value
    }
    // A tag with an unexpected payload (v: null, a string where a table belongs): redact it as plain JSON.
    return this.json(value, depth) as TypedValue
  }

  typedTable(table: TypedTable, depth: number): TypedTable {
    const keys = Object.keys(table)
    let out: TypedTable | null = null
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      const item = table[key]
      const clean: TypedValue = this.keys.matches(key) ? { t: 'S', v: REDACTED } : this.typedValue(item, depth)
      const cleanKey = this.redactKey(key)
      if (out === null && (clean !== item || cleanKey !== key)) out = copyOf(table, keys, i)
      if (out !== null) setOwn(out, cleanKey, clean)
    }
    return out ?? table
  }
}

/** The first `count` entries of `source`, in order. */
function copyOf<T>(source: Record<string, T>, keys: string[], count: number): Record<string, T> {
  const out: Record<string, T> = {}
  for (let j = 0; j < count; j++) setOwn(out, keys[j], source[keys[j]])
  return out
}

const masked = (text: string, mode: Mode, replacement: string) => (mode === 'mask' ? '*'.repeat(text.length) : replacement)

function detectorReplacer(detector: Detector, mode: Mode) {
  return (match: string, ...rest: unknown[]): string => {
    // No detector regex has named groups, so the arguments end with the offset and the whole input.
    const groups = rest.slice(0, -2) as (string | undefined)[]
    const replacement = detector.replace(match, groups, rest[rest.length - 2] as number, rest[rest.length - 1] as string)
    if (replacement === null) return match
    if (mode === 'replace') return replacement
    const [from, to] = detector.span?.(match, groups) ?? [0, match.length]
    return match.slice(0, from) + '*'.repeat(to - from) + match.slice(to)
  }
}

function looksLikeJson(text: string): boolean {
  let a = 0
  while (a < text.length && text.charCodeAt(a) <= 32) a++
  let b = text.length - 1
  while (b > a && text.charCodeAt(b) <= 32) b--
  const first = text.charCodeAt(a)
  const last = text.charCodeAt(b)
  return (first === 123 && last === 125) || (first === 91 && last === 93)
}
