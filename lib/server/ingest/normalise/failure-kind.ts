import 'server-only'
import type { FailureKind } from '../types'
import { lastSegment, withoutAssembly } from './type-names'

export const FAILURE_KINDS: readonly FailureKind[] = [
  'invalid',
  'transient',
  'exhausted',
  'expired',
  'overflow',
  'delivery-limit',
  'unknown',
]

/**
 * One exception rule. Every pattern given must match. `type` is tested against the short type name
 * (after the last `.`, `\`, `+` or `$`), `message` against the error message.
 */
export type ExceptionKindRule = {
  name: string
  kind: 'invalid' | 'transient'
  type?: RegExp
  message?: RegExp
}

/** Rules read best as lists; these build one regex from alternatives (types case-sensitive, messages not). */
const types = (...alternatives: string[]) => new RegExp(alternatives.join('|'))
const words = (...alternatives: string[]) => new RegExp(alternatives.join('|'), 'i')

const HTTP_5XX_OR_429 = words(
  String.raw`\b(?:status(?: code)?|http(?:\/\d(?:\.\d)?)?|response(?: code)?)\D{0,24}\b(?:5\d\d|429)\b`,
  String.raw`\b(?:5\d\d|429) \(?(?:internal server error|bad gateway|service unavailable|gateway time-?out|too many requests)`,
)

/**
 * docs/framework-headers.md#failure-kind. Ordered: the first matching rule wins. Rules that combine a type with a
 * message come first, then type rules (more reliable), then message rules for generic types. Extend by adding rows.
 */
export const EXCEPTION_KIND_RULES: readonly ExceptionKindRule[] = [
  // Type + message: an HTTP error is transient only for 5xx, 429 or a failed connection.
  { name: 'http-5xx', kind: 'transient', type: /^Http\w*Exception$/, message: HTTP_5XX_OR_429 },
  {
    name: 'http-connect',
    kind: 'transient',
    type: /^Http\w*Exception$/,
    message: words(
      String.raw`connection (?:was )?(?:refused|reset|closed)`,
      'actively refused',
      'no such host',
      'timed out',
      'ECONNREFUSED',
      'ECONNRESET',
    ),
  },

  // Types: content that will never be processable.
  { name: 'json', kind: 'invalid', type: types(String.raw`^Json\w*(?:Exception|Error)$`, '^JSONDecodeError$') },
  {
    name: 'validation',
    kind: 'invalid',
    type: types(String.raw`Validation\w*(?:Exception|Error)$`, String.raw`^ConstraintViolation\w*Exception$`, String.raw`NotValid\w*Exception$`),
  },
  { name: 'serialization', kind: 'invalid', type: types(String.raw`(?:Serialization|Deserialization)\w*(?:Exception|Error)$`) },
  {
    name: 'conversion',
    kind: 'invalid',
    type: types(String.raw`^Message(?:Conversion|Deserialization|Decoding\w*)Exception$`, 'NotReadableException$'),
  },
  { name: 'parse', kind: 'invalid', type: types(String.raw`Pars(?:e|ing)\w*(?:Exception|Error)$`, '^MismatchedInputException$') },
  { name: 'format', kind: 'invalid', type: types(String.raw`Format\w*Exception$`) },
  { name: 'argument', kind: 'invalid', type: types(String.raw`^(?:Illegal)?Argument\w*Exception$`) },
  { name: 'syntax', kind: 'invalid', type: types('^SyntaxError$') },
  { name: 'zod', kind: 'invalid', type: types('^ZodError$') },
  {
    name: 'schema',
    kind: 'invalid',
    type: types(String.raw`^Schema\w*(?:Exception|Error)$`, String.raw`^InvalidPayload\w*$`, String.raw`^Unmarshal\w*Exception$`),
  },
  { name: 'decode', kind: 'invalid', type: types(String.raw`Decod(?:e|ing)\w*(?:Exception|Error)$`) },

  // Types: failures that may succeed on a later attempt.
  { name: 'timeout', kind: 'transient', type: types(String.raw`Time[dD]?[oO]ut\w*(?:Exception|Error)?$`, '^TaskCanceledException$') },
  { name: 'socket', kind: 'transient', type: types(String.raw`^Socket\w*(?:Exception|Error)$`, String.raw`^BrokenPipe\w*$`) },
  {
    name: 'connection',
    kind: 'transient',
    type: types(
      String.raw`^Connect(?:ion)?\w*(?:Exception|Error)$`,
      String.raw`ConnectionRe(?:fused|set)\w*$`,
      '^CannotGetJdbcConnectionException$',
    ),
  },
  { name: 'unavailable', kind: 'transient', type: types(String.raw`Unavailable\w*(?:Exception|Error)?$`, String.raw`^BrokerUnreachable\w*$`) },
  {
    name: 'deadlock',
    kind: 'transient',
    type: types(String.raw`Deadlock\w*$`, String.raw`^CannotAcquireLock\w*$`, String.raw`^PessimisticLocking\w*$`),
  },
  {
    name: 'transient-data-access',
    kind: 'transient',
    type: types(String.raw`^(?:Transient|Recoverable)DataAccess\w*$`, String.raw`^SqlTransient\w*$`),
  },
  { name: 'rate-limit', kind: 'transient', type: types(String.raw`RateLimit\w*`, String.raw`TooManyRequests\w*`, String.raw`Throttl\w*`) },
  { name: 'server-error', kind: 'transient', type: types('^HttpServerErrorException$', '^ResourceAccessException$') },

  // Messages, for generic types (Exception, RuntimeException, Error…).
  {
    name: 'message-invalid',
    kind: 'invalid',
    message: words(
      String.raw`\b(?:invalid|malformed) (?:json|payload|message|input|format|request body)\b`,
      String.raw`\bunexpected (?:token|end of (?:json )?input|character)\b`,
      String.raw`\b(?:failed to|could not|cannot|unable to) (?:parse|deserializ|decode|convert)`,
      String.raw`\bschema validation\b`,
      String.raw`\bvalidation (?:failed|error)`,
      String.raw`\bis not valid JSON\b`,
      String.raw`\bJSON parse error\b`,
    ),
  },
  { name: 'message-http', kind: 'transient', message: HTTP_5XX_OR_429 },
  {
    name: 'message-transient',
    kind: 'transient',
    message: words(
      String.raw`\btimed? ?out\b`,
      String.raw`\btimeout\b`,
      String.raw`\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b`,
      String.raw`connection (?:was )?(?:refused|reset|closed|aborted)`,
      String.raw`(?:could not|failed to|unable to) connect`,
      'no route to host',
      String.raw`(?:host|network) is unreachable`,
      'broken pipe',
      String.raw`\bdeadlock\b`,
      String.raw`\bservice unavailable\b`,
      String.raw`\btemporar(?:y|ily) (?:failure|unavailable)\b`,
      String.raw`\btry again later\b`,
      String.raw`too many (?:requests|connections)`,
      String.raw`rate.?limit`,
      String.raw`\bthrottl`,
      'could not serialize access',
    ),
  },
]

/** x-death reasons (docs/rabbitmq.md#dead-letter-reasons) to kinds. */
export const DEATH_REASON_KINDS: Readonly<Record<string, FailureKind>> = {
  rejected: 'exhausted',
  expired: 'expired',
  maxlen: 'overflow',
  delivery_limit: 'delivery-limit',
}

export type FailureKindInput = {
  /** The `x-failure-kind` header, raw. */
  explicit: string | null
  errorTypes: readonly (string | null)[]
  messages: readonly (string | null)[]
  /** The x-death reason that explains the dead-lettering (see XDeathSummary.decisiveReason). */
  deathReason: string | null
  /** Any error metadata at all: a framework that records an error has given up on the message. */
  hasError: boolean
}

export type FailureKindResult = { kind: FailureKind; source: string; flags: string[] }

/** Rules look at the start of a message and at type names; longer inputs only cost time. */
const MAX_MESSAGE_SCAN = 2000
const MAX_TYPE_SCAN = 256

export function shortTypeForRules(type: string): string {
  return lastSegment(withoutAssembly(type), '.\\+$') ?? type
}

function anyMatches(pattern: RegExp, texts: readonly string[]): boolean {
  for (let i = 0; i < texts.length; i++) if (pattern.test(texts[i])) return true
  return false
}

export function parseFailureKind(value: string | null): FailureKind | null {
  const normalised = value?.trim().toLowerCase().replace(/_/g, '-')
  return (FAILURE_KINDS as readonly string[]).includes(normalised ?? '') ? (normalised as FailureKind) : null
}

export function matchExceptionRule(
  types: readonly (string | null)[],
  messages: readonly (string | null)[],
  rules: readonly ExceptionKindRule[] = EXCEPTION_KIND_RULES,
): ExceptionKindRule | null {
  const shortTypes: string[] = []
  for (const t of types) if (t) shortTypes.push(shortTypeForRules(t).slice(0, MAX_TYPE_SCAN))
  const texts: string[] = []
  for (const m of messages) if (m) texts.push(m.length > MAX_MESSAGE_SCAN ? m.slice(0, MAX_MESSAGE_SCAN) : m)
  // Loops rather than some(): no closure per rule and message (docs/performance.md#drainer).
  for (let r = 0; r < rules.length; r++) {
    const rule = rules[r]
    if (!rule.type && !rule.message) continue
    if (rule.type && !anyMatches(rule.type, shortTypes)) continue
    if (rule.message && !anyMatches(rule.message, texts)) continue
    return rule
  }
  return null
}

/** docs/framework-headers.md#failure-kind: explicit header, then exception rules, then the x-death reason. */
export function classifyFailure(input: FailureKindInput): FailureKindResult {
  const flags: string[] = []
  if (input.explicit !== null) {
    const explicit = parseFailureKind(input.explicit)
    if (explicit) return { kind: explicit, source: 'x-failure-kind', flags }
    flags.push('failure-kind-header-invalid')
  }
  const rule = matchExceptionRule(input.errorTypes, input.messages)
  if (rule) return { kind: rule.kind, source: `rule:${rule.name}`, flags }
  const reason = input.deathReason
  if (reason !== null && Object.hasOwn(DEATH_REASON_KINDS, reason)) {
    return { kind: DEATH_REASON_KINDS[reason], source: `x-death:${reason}`, flags }
  }
  if (input.hasError) return { kind: 'exhausted', source: 'error-without-rule', flags }
  return { kind: 'unknown', source: 'none', flags }
}
