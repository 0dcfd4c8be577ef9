import 'server-only'

/** What the scan asks about the JSON it walks. */
export type JsonRedactionHooks = {
  isSecretKey(key: string): boolean
  /** The string's replacement (the same string when nothing is redacted). */
  redactString(value: string, depth: number): string
  /** The key's replacement (a key may itself be an e-mail address). */
  redactKey(key: string): string
  /** The replacement JSON for a number, or null to keep it. */
  redactNumber(raw: string): string | null
  /** The replacement JSON for any value under a secret key. */
  readonly secretValue: string
}

// Past this, nesting is hostile, not data: the scan gives up (null) and the caller falls back to text rules.
const MAX_NESTING = 512

class NotJson extends Error {}
const NOT_JSON = new NotJson()

/**
 * Redacts JSON text in place: only the spans of redacted values (and keys) are rewritten, so everything else —
 * whitespace, key order, duplicate keys, numbers beyond double precision — stays exactly as it was. Returns the
 * input itself when nothing changed, and null when it is not JSON.
 */
export function redactJsonText(text: string, hooks: JsonRedactionHooks, depth: number): string | null {
  const scan = new Scan(text, hooks, depth)
  try {
    scan.skipBlank()
    scan.value(0, false)
    scan.skipBlank()
    if (scan.i !== text.length) return null
  } catch (error) {
    if (error === NOT_JSON || error instanceof SyntaxError) return null
    throw error
  }
  return scan.result()
}

class Scan {
  i = 0
  private edits: [number, number, string][] = []

  constructor(
    private readonly text: string,
    private readonly hooks: JsonRedactionHooks,
    private readonly depth: number,
  ) {}

  skipBlank(): void {
    const { text } = this
    while (this.i < text.length) {
      const c = text.charCodeAt(this.i)
      if (c === 32 || c === 10 || c === 13 || c === 9) this.i++
      else break
    }
  }

  /** Index just past the string starting at `start` (a quote). */
  private stringEnd(start: number): number {
    const { text } = this
    let from = start + 1
    for (;;) {
      const quote = text.indexOf('"', from)
      if (quote < 0) throw NOT_JSON
      let backslashes = 0
      for (let k = quote - 1; k > start && text.charCodeAt(k) === 92; k--) backslashes++
      if (backslashes % 2 === 0) return quote + 1
      from = quote + 1
    }
  }

  private decode(start: number, end: number): string {
    const raw = this.text.slice(start + 1, end - 1)
    return raw.includes('\\') ? (JSON.parse(this.text.slice(start, end)) as string) : raw
  }

  private expect(code: number): void {
    if (this.text.charCodeAt(this.i) !== code) throw NOT_JSON
    this.i++
  }

  /** One value at `i`; `secret` when it sits under a secret key (then it is skipped, the caller replaces it whole). */
  value(level: number, secret: boolean): void {
    if (level > MAX_NESTING) throw NOT_JSON
    const { text } = this
    const c = text.charCodeAt(this.i)
    if (c === 123 /* { */) return this.object(level, secret)
    if (c === 91 /* [ */) return this.array(level, secret)
    if (c === 34 /* " */) {
      const start = this.i
      this.i = this.stringEnd(start)
      if (secret) return
      const decoded = this.decode(start, this.i)
      const clean = this.hooks.redactString(decoded, this.depth)
      if (clean !== decoded) this.edits.push([start, this.i, JSON.stringify(clean)])
      return
    }
    if (c === 45 || (c >= 48 && c <= 57)) {
      const start = this.i
      this.i++
      while (this.i < text.length) {
        const d = text.charCodeAt(this.i)
        if ((d >= 48 && d <= 57) || d === 46 || d === 101 || d === 69 || d === 43 || d === 45) this.i++
        else break
      }
      if (secret) return
      const replacement = this.hooks.redactNumber(text.slice(start, this.i))
      if (replacement !== null) this.edits.push([start, this.i, replacement])
      return
    }
    if (text.startsWith('true', this.i)) this.i += 4
    else if (text.startsWith('false', this.i)) this.i += 5
    else if (text.startsWith('null', this.i)) this.i += 4
    else throw NOT_JSON
  }

  // object() and array() walk their members with the same loop on purpose: this scanner runs over every body shown,
  // and a shared loop would need a callback per member and lose the key handling that only objects have.
  private object(level: number, secret: boolean): void {
    this.i++
    this.skipBlank()
    if (this.text.charCodeAt(this.i) === 125) {
      this.i++
      return
    }
    for (;;) {
      if (this.text.charCodeAt(this.i) !== 34) throw NOT_JSON
      const keyStart = this.i
      this.i = this.stringEnd(keyStart)
      const keyEnd = this.i
      const key = this.decode(keyStart, keyEnd)
      this.skipBlank()
      this.expect(58 /* : */)
      this.skipBlank()
      const valueStart = this.i
      const secretKey = !secret && this.hooks.isSecretKey(key)
      this.value(level + 1, secret || secretKey)
      if (secretKey) this.edits.push([valueStart, this.i, this.hooks.secretValue])
      if (!secret) {
        const cleanKey = this.hooks.redactKey(key)
        if (cleanKey !== key) this.edits.push([keyStart, keyEnd, JSON.stringify(cleanKey)])
      }
      this.skipBlank()
      const next = this.text.charCodeAt(this.i++)
      if (next === 125) return
      if (next !== 44) throw NOT_JSON
      this.skipBlank()
    }
  }

  private array(level: number, secret: boolean): void {
    this.i++
    this.skipBlank()
    if (this.text.charCodeAt(this.i) === 93) {
      this.i++
      return
    }
    for (;;) {
      this.value(level + 1, secret)
      this.skipBlank()
      const next = this.text.charCodeAt(this.i++)
      if (next === 93) return
      if (next !== 44) throw NOT_JSON
      this.skipBlank()
    }
  }

  result(): string {
    const { edits, text } = this
    if (edits.length === 0) return text
    edits.sort((a, b) => a[0] - b[0])
    let out = ''
    let copied = 0
    for (const [from, to, replacement] of edits) {
      out += text.slice(copied, from) + replacement
      copied = to
    }
    return out + text.slice(copied)
  }
}
