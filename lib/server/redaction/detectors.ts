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
  /** The replacement for one match (`groups` are the regex's capture groups); null leaves the match as it is. */
  replace: (match: string, groups: (string | undefined)[]) => string | null
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
 * 13 to 19 digits, optionally grouped by single spaces or dashes, starting with an issuer digit (2-6: Mastercard,
 * Visa, Amex, Diners, JCB, Discover, UnionPay), passing Luhn. Epoch-millisecond timestamps start with 1 and are left alone.
 */
export function isCardNumber(candidate: string): boolean {
  const digits = candidate.replace(/[ -]/g, '')
  return digits.length >= 13 && digits.length <= 19 && digits.charCodeAt(0) >= 50 && digits.charCodeAt(0) <= 54 && luhnValid(digits)
}

// A scheme word followed by white space: a test, no lower-cased copy of every string.
const SCHEMES = /(?:bearer|basic|token|apikey)\s/i

// The shortest thing the card regex accepts: 13 digits from an issuer digit on, single spaces or dashes between.
const cardShaped = /[2-6]\d(?:[ -]?\d){11}/

export const DETECTORS: Record<RedactionDetector, Detector> = {
  email: {
    name: 'email',
    hint: (t) => t.includes('@'),
    // (?=(…))\1: an atomic local part, taken whole and never backtracked into.
    regex: /(?<![A-Za-z0-9._%+-])(?=([A-Za-z0-9._%+-]{1,64}))\1@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])/g,
    replace: () => mask('email'),
  },
  'card-number': {
    name: 'card-number',
    hint: (t) => cardShaped.test(t.value),
    regex: /(?<![\d.,-])[2-6]\d(?:[ -]?\d){11,17}(?![\d])/g,
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
    // The credential must hold a digit or a base64/URL symbol, so "Basic authentication failed" stays readable.
    regex: /(?<![A-Za-z])(Bearer|Basic|Token|ApiKey)(\s+)((?=[A-Za-z0-9._~+/=-]*[0-9+/=_.~-])[A-Za-z0-9._~+/=-]{8,})/gi,
    replace: (_m, g) => `${g[0]}${g[1]}${mask('token')}`,
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
}

export const DETECTOR_INFO: RedactionDetectorDto[] = [
  { name: 'email', label: 'E-mail addresses', description: 'Anything shaped like an e-mail address.', example: 'jane.doe@example.com' },
  {
    name: 'card-number',
    label: 'Payment card numbers',
    description: '13–19 digits (spaces or dashes allowed) that pass the Luhn check.',
    example: '4111 1111 1111 1111',
  },
  { name: 'jwt', label: 'JSON Web Tokens', description: 'eyJ….eyJ….signature', example: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig' },
  {
    name: 'bearer-token',
    label: 'Bearer / Basic credentials',
    description: 'The credential after Bearer, Basic, Token or ApiKey (the scheme stays).',
    example: 'Authorization: Bearer abc123.def456',
  },
  { name: 'url-password', label: 'Passwords in URLs', description: 'The password in scheme://user:password@host (the user stays).', example: 'amqp://app:s3cret@rabbit:5672' },
  { name: 'private-key', label: 'Private keys', description: 'PEM blocks -----BEGIN … PRIVATE KEY-----.', example: '-----BEGIN RSA PRIVATE KEY-----…' },
]
