import 'server-only'
import type { EntityKeyRule } from '../types'
import { asRecord, asText, getField } from './header-values'
import type { ParsedJson } from './delivery-body'

/** Longer values are payloads, not keys; grouping or pausing by them would be meaningless. */
export const MAX_ENTITY_KEY_LENGTH = 1024

const PROPERTY_NAMES = ['correlationId', 'messageId', 'type', 'appId', 'userId', 'replyTo'] as const

export type EntityKeySource = {
  properties: unknown
  headers: unknown
  /** The JSON document a pointer applies to; null when the body is not JSON. */
  json: () => ParsedJson | null
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
  // "~" may only introduce "~0" or "~1".
  if (tokens.some((t) => /~(?![01])/.test(t))) return null
  return tokens.map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** Resolves a parsed pointer; undefined when any step is missing. */
export function resolveJsonPointer(document: unknown, tokens: readonly string[]): unknown {
  let current: unknown = document
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(?:0|[1-9]\d*)$/.test(token)) return undefined
      const index = Number(token)
      if (index >= current.length) return undefined
      current = current[index]
    } else if (asRecord(current)) {
      if (!Object.hasOwn(current as object, token)) return undefined
      current = (current as Record<string, unknown>)[token]
    } else return undefined
  }
  return current
}

/** Scalars only: an object or array is not a key. */
function keyText(value: unknown): string | null {
  if (value === null || value === undefined || typeof value === 'object' && !(value instanceof Uint8Array)) {
    return null
  }
  const text = asText(value)?.trim() ?? null
  return text && text.length <= MAX_ENTITY_KEY_LENGTH ? text : null
}

export function isValidEntityKeyRule(rule: unknown): rule is EntityKeyRule {
  const kind = getField(rule, 'kind')
  if (kind === 'property') return (PROPERTY_NAMES as readonly unknown[]).includes(getField(rule, 'name'))
  if (kind === 'header') return typeof getField(rule, 'name') === 'string' && getField(rule, 'name') !== ''
  if (kind === 'jsonPointer') {
    const pointer = getField(rule, 'pointer')
    return typeof pointer === 'string' && parseJsonPointer(pointer) !== null
  }
  return false
}

/** Applies a source's entity-key rule (product.md §3). Invalid rules, bodies or values give null. */
export function extractEntityKey(rule: EntityKeyRule | null | undefined, source: EntityKeySource): string | null {
  if (!isValidEntityKeyRule(rule)) return null
  switch (rule.kind) {
    case 'property':
      return keyText(getField(source.properties, rule.name))
    case 'header':
      return keyText(getField(source.headers, rule.name))
    case 'jsonPointer': {
      const tokens = parseJsonPointer(rule.pointer)
      const parsed = source.json()
      if (!tokens || !parsed) return null
      return keyText(resolveJsonPointer(parsed.value, tokens))
    }
  }
}
