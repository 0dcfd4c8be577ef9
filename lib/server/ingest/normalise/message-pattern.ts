import 'server-only'
import { BoundedCache } from './bounded-cache'

/**
 * Message parameterisation (docs/framework-headers.md#message-parameterisation): Sentry's parameterizer
 * (getsentry/sentry src/sentry/grouping/parameterization.py) followed by Lazarus' extra rules.
 *
 * Sentry combines its patterns into one alternation and scans left to right, so at any position the
 * first pattern in this list that matches wins. That order is part of the grouping contract (v1):
 * changing it changes signatures.
 */

const TLDS =
  'COM|NET|ORG|JP|DE|UK|FR|BR|IT|RU|ES|ME|GOV|PL|CA|AU|CN|CO|IN|NL|EDU|INFO|EU|CH|ID|AT|KR|CZ|MX|BE|TV|SE|TR|TW|AL|UA|IR|VN|CL|SK|LY|CC|TO|NO|FI|US|PT|DK|AR|HU|TK|GR|IL|NEWS|RO|MY|BIZ|IE|ZA|NZ|SG|EE|TH|IO|XYZ|PE|BG|HK|RS|LT|LINK|PH|CLUB|SI|SITE|MOBI|BY|CAT|WIKI|LA|GA|XXX|CF|HR|NG|JOBS|ONLINE|KZ|UG|GQ|AE|IS|LV|PRO|FM|TIPS|MS|SA|APP'

const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)'
const DAY = '(?:Sun|Mon|Tue|Wed|Thu|Fri|Sat)'
const ZONE = '(?:UT|GMT|(?:E|C|M|P)(?:ST|DT)|[A-IK-Z])'
const IPV4 = String.raw`(?:(?:25[0-5]|(?:2[0-4]|1{0,1}[0-9]){0,1}[0-9])\.){3,3}(?:25[0-5]|(?:2[0-4]|1{0,1}[0-9]){0,1}[0-9])`
const H = '[0-9a-fA-F]{1,4}'

const SENTRY_PATTERNS: ReadonlyArray<[string, string]> = [
  ['email', String.raw`[a-zA-Z0-9.!#$%&'*+/=?^_\`{|}~-]+@[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*`],
  ['url', String.raw`\b(?:wss?|https?|ftp):\/\/[^\s/$.?#].[^\s]*`],
  ['hostname', String.raw`\b(?:[a-zA-Z0-9\-]{1,63}\.)+?(?:(?:${TLDS})|(?:${TLDS.toLowerCase()}))\b`],
  [
    'ip',
    [
      String.raw`(?<![0-9a-zA-Z_])(?:`,
      [
        `(?:${H}:){7,7}${H}`,
        `(?:${H}:){1,7}:`,
        `(?:${H}:){1,6}:${H}`,
        `(?:${H}:){1,5}(?::${H}){1,2}`,
        `(?:${H}:){1,4}(?::${H}){1,3}`,
        `(?:${H}:){1,3}(?::${H}){1,4}`,
        `(?:${H}:){1,2}(?::${H}){1,5}`,
        `${H}:(?:(?::${H}){1,6})`,
        `:(?:(?::${H}){1,7}|:)`,
        String.raw`fe80:(?::[0-9a-fA-F]{0,4}){0,4}%[0-9a-zA-Z]{1,}`,
        String.raw`::(?:ffff(?::0{1,4}){0,1}:){0,1}${IPV4}`,
        String.raw`(?:${H}:){1,4}:${IPV4}\b`,
      ].join('|'),
      String.raw`)(?![0-9a-zA-Z])|\b${IPV4}\b`,
    ].join(''),
  ],
  ['uuid', String.raw`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`],
  ['sha1', String.raw`\b[0-9a-fA-F]{40}\b`],
  ['md5', String.raw`\b[0-9a-fA-F]{32}\b`],
  [
    'date',
    [
      // RFC822, RFC1123, RFC1123Z
      String.raw`${DAY},\s\d{1,2}\s${MONTH}\s\d{2,4}\s\d{1,2}:\d{1,2}(?::\d{1,2})?\s(?:[-+][\d]{2}[0-5][\d]|${ZONE})`,
      // "Mon Jan 02, 1999", "Jan 02, 1999"
      String.raw`(?:${DAY}\s)?${MONTH}\s[0-3]\d,\s\d{2,4}`,
      // RFC850
      String.raw`(?:Sun|Sunday|Mon|Monday|Tue|Tuesday|Wed|Wednesday|Thu|Thursday|Fri|Friday|Sat|Saturday),\s\d{2}-${MONTH}-\d{2}\s\d{2}:\d{2}:\d{2}\s${ZONE}`,
      // RFC3339, RFC3339Nano
      String.raw`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?(?:[+-]?\d{2}:\d{2})?`,
      // JavaScript Date.toString()
      String.raw`${DAY}\s${MONTH}\s\d{2}\s\d{4}\s\d{2}:\d{2}:\d{2}\sGMT[+-]\d{4}(?:\s\([^)]+\))?`,
      // Datetime with a zone offset, before plain datetimes so the offset is not left behind as an int.
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d:?[0-5]\d\.\d+(?:[+-][0-2]\d:?[0-5]\d|Z)`,
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d:?[0-5]\d(?:[+-][0-2]\d:?[0-5]\d|Z)`,
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d(?:[+-][0-2]\d:?[0-5]\d|Z)`,
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d:?[0-5]\d\.\d+`,
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d:?[0-5]\d`,
      String.raw`\d{4}-?[01]\d-?[0-3]\d[\sT][0-2]\d:?[0-5]\d`,
      // Kitchen time, 12-hour then 24-hour
      String.raw`(?<!\d)(?:[1-9]|1[0-2]):[0-5]\d(?::[0-5]\d)?(?![\d:])(?:\s?[aApP][Mm])?`,
      String.raw`(?<!\d)(?:0?\d|1\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])`,
      String.raw`\d{4}-[01]\d-[0-3]\d`,
      String.raw`[0-2]\d:[0-5]\d:[0-5]\d`,
      String.raw`\b(?:${DAY}\s+)?${MONTH}\s+[\d]{1,2}\s+[\d]{2}:[\d]{2}:[\d]{2}\s+[\d]{4}`,
      String.raw`\b(?:${DAY},\s+)?(?:0[1-9]|[1-2]?[\d]|3[01])\s+${MONTH}\s+(?:19[\d]{2}|[2-9][\d]{3})\s+(?:2[0-3]|[0-1][\d]):[0-5][\d](?::(?:60|[0-5][\d]))?\s+(?:[-+][\d]{2}[0-5][\d]|${ZONE})`,
      String.raw`datetime\.datetime\(.*?\)`,
    ].join('|'),
  ],
  ['duration', String.raw`\b\d+ms|\d+(?:\.\d+)?s\b`],
  ['hex', String.raw`\b0[xX][0-9a-fA-F]+\b|\b(?=[a-f]*[0-9])[0-9a-f]{8,128}\b|\b(?=[A-F]*[0-9])[0-9A-F]{8,128}\b`],
  ['float', String.raw`-\d+\.\d+\b|\b\d+\.\d+\b`],
  ['int', String.raw`(?:\b|(?<!\w)-)\d{1,7}\b`],
  ['quoted_str', String.raw`(?<==)(?:'[^']+'|"[^"]+")`],
  ['bool', String.raw`(?<==)(?:True|true|False|false)`],
]

const SENTRY_REGEX = new RegExp(SENTRY_PATTERNS.map(([name, source]) => `(?<${name}>${source})`).join('|'), 'g')

function sentryParameterize(input: string): string {
  return input.replace(SENTRY_REGEX, (...args: unknown[]) => {
    const groups = args[args.length - 1] as Record<string, string | undefined>
    const name = SENTRY_PATTERNS.find(([key]) => groups[key] !== undefined)?.[0]
    return name ? `<${name}>` : String(args[0])
  })
}

/** Lazarus' additions, applied in order after Sentry's pass. */
const EXTRA_RULES: ReadonlyArray<[RegExp, string]> = [
  // Any quoted literal, not only after "=". The quote must not touch a word, so "can't" stays intact.
  [/(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)"[^"\n]*"(?!\w)|(?<!\w)`[^`\n]*`(?!\w)/g, '<str>'],
  // Hex / base32 / ULID-style ids of 8+ characters that contain a digit (single-case, so words in CamelCase survive).
  [/\b(?=[0-9A-Za-z]*[0-9])(?:[0-9A-Z]{8,}|[0-9a-z]{8,})\b/g, '<id>'],
  [/\d{6,}/g, '<int>'],
  // Absolute paths: POSIX with two or more segments, Windows drive and UNC paths. Segments may already hold
  // placeholders such as <int>, since Sentry's pass ran first.
  [/(?<![\w/.:~<>-])\/[\w.@+<>-]+(?:\/[\w.@+<>-]+)+\/?|\b[A-Za-z]:\\[^\s:*?"<>|]+|\\\\[^\s:*?"<>|]+/g, '<path>'],
]

/** Only the start of a message reaches the 256-char pattern; scanning more only costs time. */
const MAX_INPUT = 1024
export const MAX_PATTERN_LENGTH = 256

/**
 * A flood of one failure repeats its message, often word for word, and the Sentry pass is the normaliser's
 * costliest step: results are remembered per input (bounded, oldest first out; strings cannot be mutated).
 */
const patternCache = new BoundedCache<string | null>({ entries: 4096, maxKeyLength: MAX_INPUT })

/** Normalises an error message for grouping and titles. Returns null for a blank message. */
export function normaliseMessage(message: string | null | undefined): string | null {
  if (!message) return null
  const input = message.length > MAX_INPUT ? message.slice(0, MAX_INPUT) : message
  return patternCache.get(input, () => {
    let text = sentryParameterize(input)
    for (const [pattern, replacement] of EXTRA_RULES) text = text.replace(pattern, replacement)
    text = text.replace(/\s+/g, ' ').trim().slice(0, MAX_PATTERN_LENGTH)
    return text === '' ? null : text
  })
}
