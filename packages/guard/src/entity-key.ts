import { DEFAULT_ENTITY_HEADER, type EntityKeyRule } from './protocol'

/**
 * Finds a message's entity key the way Lazarus' drainer does (lib/server/ingest/normalise/entity-key.ts),
 * so a pause created from a stored dead letter matches the live messages of the same entity. The guard runs
 * inside applications and must not depend on Lazarus' server code, so the drainer takes the JSON-pointer functions
 * from here; the rest is written for each side's value types, and a unit test checks both agree.
 */

/** Longer values are payloads, not keys (same bound as the drainer). */
export const MAX_ENTITY_KEY_LENGTH = 1024
/** Bodies above this are not parsed (same bound as the drainer). */
const MAX_PARSED_BODY_BYTES = 4 * 1024 * 1024
/** Content encodings that leave the bytes as they are. */
const IDENTITY_ENCODINGS = ['identity', 'utf-8', 'utf8', '7bit', '8bit', 'binary']

/** The parts of an amqplib message the extractor reads. */
export type KeyedMessage = {
  content: Uint8Array
  properties: { headers?: unknown; contentEncoding?: unknown }
}

function ownField(record: unknown, name: string): unknown {
  if (record === null || typeof record !== 'object' || Array.isArray(record) || record instanceof Uint8Array || record instanceof Date) return undefined
  return Object.hasOwn(record, name) ? (record as Record<string, unknown>)[name] : undefined
}

const lenientUtf8 = new TextDecoder('utf-8')
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** Scalars only: an object, array, date or tagged amqplib value is not a key. */
function keyText(value: unknown): string | null {
  let text: string | null = null
  if (typeof value === 'string') text = value
  else if (value instanceof Uint8Array) text = lenientUtf8.decode(value)
  else if (typeof value === 'number') text = Number.isFinite(value) ? String(value) : null
  else if (typeof value === 'bigint' || typeof value === 'boolean') text = String(value)
  const trimmed = text?.trim() ?? null
  return trimmed && trimmed.length <= MAX_ENTITY_KEY_LENGTH ? trimmed : null
}

/** RFC 6901 pointer, also in its URI-fragment form (`#/a/b`); null when the syntax is invalid. */
export function parseJsonPointer(pointer: string): string[] | null {
  let text = pointer
  if (text.startsWith('#')) {
    try {
      text = decodeURIComponent(text.slice(1))
    } catch {
      return null
    }
  }
  if (text === '') return []
  if (!text.startsWith('/')) return null
  const tokens = text.slice(1).split('/')
  if (tokens.some((t) => /~(?![01])/.test(t))) return null
  return tokens.map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** Resolves a parsed pointer; undefined when any step is missing. The drainer uses these two functions too. */
export function resolveJsonPointer(document: unknown, tokens: readonly string[]): unknown {
  let current = document
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(?:0|[1-9]\d*)$/.test(token)) return undefined
      const index = Number(token)
      if (index >= current.length) return undefined
      current = current[index]
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, token)) return undefined
      current = (current as Record<string, unknown>)[token]
    } else return undefined
  }
  return current
}

function parseBody(message: KeyedMessage): { value: unknown } | null {
  const encoding = typeof message.properties.contentEncoding === 'string' ? message.properties.contentEncoding.trim().toLowerCase() : ''
  if (encoding !== '' && !IDENTITY_ENCODINGS.includes(encoding)) return null
  if (message.content.length > MAX_PARSED_BODY_BYTES) return null
  let text: string
  try {
    text = strictUtf8.decode(message.content)
  } catch {
    return null
  }
  const trimmed = text.replace(/^\uFEFF/, '').trim()
  if (trimmed === '') return null
  try {
    return { value: JSON.parse(trimmed) as unknown }
  } catch {
    return null
  }
}

/**
 * The raw value a rule points at (a property, a header, or a JSON pointer into the body); undefined when there is
 * none. Entity keys and entity versions (entity-version.ts) read their rules through it.
 */
export function ruleValue(rule: EntityKeyRule, message: KeyedMessage): unknown {
  switch (rule.kind) {
    case 'property':
      return ownField(message.properties, rule.name)
    case 'header':
      return ownField(message.properties.headers, rule.name)
    case 'jsonPointer': {
      const tokens = parseJsonPointer(rule.pointer)
      if (!tokens) return undefined
      const parsed = parseBody(message)
      return parsed ? resolveJsonPointer(parsed.value, tokens) : undefined
    }
    default:
      return undefined
  }
}

/**
 * The entity key of a message under a rule; null when the rule finds nothing usable. A null rule means the
 * source has none: Lazarus then reads the `x-entity-key` header, and so does the guard.
 */
export function extractEntityKey(rule: EntityKeyRule | null, message: KeyedMessage): string | null {
  return keyText(ruleValue(rule ?? { kind: 'header', name: DEFAULT_ENTITY_HEADER }, message))
}
