import 'server-only'
import type { RedactionDetector, RedactionDetectorDto } from '@/lib/shared/schemas/redaction'

/**
 * The built-in value detectors. Each has a cheap `hint` (indexOf or a short test) that must hold for its regex to
 * be worth running: most strings in a message (enum values, ids, amounts) skip every regex.
 *
 * Every regex here is linear in its input: repetitions are bounded or separated by a character the previous part
 * cannot match, and runs of digits or word characters are entered only at their first character (look-behinds), so
 * hostile message content cannot make an export spin.
 */
export type Detector = {
  name: RedactionDetector
  /** `text.lower()` is the text in lower case, computed once for all detectors. */
  hint: (text: HintText) => boolean
  regex: RegExp
  /**
   * The replacement for one match (`groups` are the regex's capture groups, `offset` where the match starts in
   * `input`); null leaves the match as it is.
   */
  replace: (match: string, groups: (string | undefined)[], offset: number, input: string) => string | null
  /** The part of the match the replacement stands for: [start, end) within the match, for same-length masking. */
  span?: (match: string, groups: (string | undefined)[]) => [number, number]
}

/** The text a detector's hint looks at, with its lower-case form computed at most once. */
export class HintText {
  private lowered: string | null = null
  constructor(readonly value: string) {}
  lower(): string {
    return (this.lowered ??= this.value.toLowerCase())
  }
  includes(needle: string): boolean {
    return this.value.includes(needle)
  }
}

export const mask = (name: string) => `[REDACTED:${name}]`

/** The Luhn checksum every payment card number carries; ids and timestamps of the same length pass it only 1 in 10. */
export function luhnValid(digits: string): boolean {
  let sum = 0
  let double = false
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48
    if (d < 0 || d > 9) return false
    if (double) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
    double = !double
  }
  return sum % 10 === 0
}

/**
 * 13 to 19 digits, optionally grouped by spaces (one or two), dots or dashes, starting with an issuer digit (2-6:
 * Mastercard, Visa, Amex, Diners, JCB, Discover, UnionPay), passing Luhn. Epoch-millisecond timestamps start with 1
 * and are left alone.
 */
export function isCardNumber(candidate: string): boolean {
  const digits = candidate.replace(/[ .-]/g, '')
  return digits.length >= 13 && digits.length <= 19 && digits.charCodeAt(0) >= 50 && digits.charCodeAt(0) <= 54 && luhnValid(digits)
}

// A scheme word followed by white space: a test, no lower-cased copy of every string.
const SCHEMES = /(?:bearer|basic|token|apikey)\s/i

// The shortest thing the card regex accepts: 13 digits from an issuer digit on, the same separators between.
const cardShaped = /[2-6]\d(?:(?: {1,2}|[.-])?\d){11}/

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const PRINTABLE_PAIR = /^[\x20-\x7e]+:[\x20-\x7e]*$/

/**
 * Whether the word after Bearer/Basic/Token/ApiKey is a credential rather than prose ("Basic authentication failed"):
 * it holds a digit or a base64/URL symbol, or is 16 characters or more (no English word after a scheme name is),
 * or, for Basic, decodes to `user:password`, or it stands alone as a header value (`X-Auth: Bearer abcdefgh`).
 */
function isCredential(scheme: string, credential: string, offset: number, end: number, input: string): boolean {
  if (/[0-9+/=_.~-]/.test(credential) || credential.length >= 16) return true
  if (scheme.toLowerCase() === 'basic' && BASE64.test(credential) && PRINTABLE_PAIR.test(Buffer.from(credential, 'base64').toString('latin1'))) return true
  return standsAlone(input, offset, end)
}

/** A header name, its colon and the white space around them, at most. */
const MAX_HEADER_PREFIX = 128

/**
 * The match is a whole quoted string (`"x-auth": "Bearer abcdefgh"`), or all its line holds apart from white space,
 * quotes and a `name:` / `name=` in front of it.
 */
function standsAlone(input: string, start: number, end: number): boolean {
  const quote = input.charCodeAt(start - 1)
  if ((quote === 34 || quote === 39) && input.charCodeAt(end) === quote) return true
  // Both scans stop after a few characters: a long line with many matches must not be walked once per match.
  let after = end
  if (input.charCodeAt(after) === 34 || input.charCodeAt(after) === 39) after++
  if (input.charCodeAt(after) === 44 || input.charCodeAt(after) === 59) after++
  while (after < input.length && input.charCodeAt(after) !== 10 && input.charCodeAt(after) <= 32) after++
  if (after < input.length && input.charCodeAt(after) !== 10) return false
  let lineStart = start
  while (lineStart > 0 && input.charCodeAt(lineStart - 1) !== 10) {
    if (start - lineStart >= MAX_HEADER_PREFIX) return false
    lineStart--
  }
  return /^\s*(?:["']?[\w.-]{1,64}["']?\s*[:=]\s*)?["']?$/.test(input.slice(lineStart, start))
}

/** Token formats with a fixed, documented prefix: found anywhere, whatever key (or none) they sit under. */
const SERVICE_TOKEN_HINT = /sk_|rk_|xox|AKIA|ASIA|gh[pousr]_|github_pat_|AIza|hooks\.slack\.com/
const SLACK_HOOK_PREFIX = /^https:\/\/hooks\.slack\.com\/[a-z]+\//

export const DETECTORS: Record<RedactionDetector, Detector> = {
  email: {
    name: 'email',
    hint: (t) => t.includes('@') || t.includes('%40'),
    // (?=(…))\1: an atomic local part, taken whole and never backtracked into. The at sign may be URL-encoded (%40),
    // so the local part stops at a %40 rather than swallowing it.
    regex: /(?<![A-Za-z0-9._%+-])(?=((?:[A-Za-z0-9._+-]|%(?!40)){1,64}))\1(?:@|%40)[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])/g,
    replace: () => mask('email'),
  },
  'card-number': {
    name: 'card-number',
    hint: (t) => cardShaped.test(t.value),
    // Glued to letters or a dash (order-4111…) is still a card; after a digit and a dot or comma it is the fraction
    // of a decimal number, and inside a longer run of digits it is part of an id.
    regex: /(?<!\d)(?<!\d[.,])[2-6]\d(?:(?: {1,2}|[.-])?\d){11,17}(?!\d)/g,
    replace: (m) => (isCardNumber(m) ? mask('card') : null),
  },
  jwt: {
    name: 'jwt',
    hint: (t) => t.includes('eyJ'),
    regex: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g,
    replace: () => mask('jwt'),
  },
  'bearer-token': {
    name: 'bearer-token',
    hint: (t) => SCHEMES.test(t.value),
    // Under any header or key, and in any text; isCredential keeps "Basic authentication failed" readable.
    regex: /(?<![A-Za-z])(Bearer|Basic|Token|ApiKey)([ \t]+)([A-Za-z0-9._~+/=-]{8,})/gi,
    replace: (m, g, offset, input) => (isCredential(g[0]!, g[2]!, offset, offset + m.length, input) ? `${g[0]}${g[1]}${mask('token')}` : null),
    span: (m, g) => [g[0]!.length + g[1]!.length, m.length],
  },
  'url-password': {
    name: 'url-password',
    hint: (t) => t.includes('://'),
    // Anchored on the literal "://" (found fast) rather than on the scheme; the scheme stays as it is anyway.
    regex: /:\/\/([^\s:@/?#]{0,256}):([^\s@/?#]{1,256})@/g,
    replace: (_m, g) => `://${g[0]}:${mask('password')}@`,
    span: (_m, g) => [3 + g[0]!.length + 1, 3 + g[0]!.length + 1 + g[1]!.length],
  },
  'private-key': {
    name: 'private-key',
    hint: (t) => t.includes('PRIVATE KEY-----'),
    regex: /-----BEGIN ([A-Z ]{0,40})PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g,
    replace: () => mask('private-key'),
  },
  'service-token': {
    name: 'service-token',
    hint: (t) => SERVICE_TOKEN_HINT.test(t.value),
    // Stripe secret and restricted keys, Slack tokens, AWS access key ids, GitHub tokens, Google API keys, and Slack
    // webhook URLs (the URL is the credential). Case-sensitive: the prefixes are.
    regex:
      /(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,247}|xox[abposre]-[A-Za-z0-9-]{10,250}|(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])|gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255}|AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])|https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/-]{8,300})/g,
    replace: (m) => {
      const hook = SLACK_HOOK_PREFIX.exec(m)
      return hook ? `${hook[0]}${mask('token')}` : mask('token')
    },
    span: (m) => [SLACK_HOOK_PREFIX.exec(m)?.[0].length ?? 0, m.length],
  },
}

export const DETECTOR_INFO: RedactionDetectorDto[] = [
  { name: 'email', label: 'E-mail addresses', description: 'Anything shaped like an e-mail address, URL-encoded ones (%40) too.', example: 'jane.doe@example.com' },
  {
    name: 'card-number',
    label: 'Payment card numbers',
    description: '13–19 digits (spaces, dots or dashes allowed, even glued to other text) that pass the Luhn check.',
    example: '4111 1111 1111 1111',
  },
  { name: 'jwt', label: 'JSON Web Tokens', description: 'eyJ….eyJ….signature', example: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig' },
  {
    name: 'bearer-token',
    label: 'Bearer / Basic credentials',
    description: 'The credential after Bearer, Basic, Token or ApiKey, under any header or key and in any text (the scheme stays).',
    example: 'Authorization: Bearer abc123.def456',
  },
  { name: 'url-password', label: 'Passwords in URLs', description: 'The password in scheme://user:password@host (the user stays).', example: 'amqp://app:s3cret@rabbit:5672' },
  { name: 'private-key', label: 'Private keys', description: 'PEM blocks -----BEGIN … PRIVATE KEY-----.', example: '-----BEGIN RSA PRIVATE KEY-----…' },
  {
    name: 'service-token',
    label: 'Service keys and tokens',
    description: 'Stripe sk_/rk_ keys, Slack xox… tokens and webhook URLs, AWS access key ids, GitHub and Google API keys.',
    example: 'AKIAIOSFODNN7EXAMPLE',
  },
]
