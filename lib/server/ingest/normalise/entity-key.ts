import 'server-only'
import { ENTITY_KEY_PROPERTIES, entityVersionRuleSchema, type EntityKeyRule, type EntityVersionRule } from '@/lib/shared/schemas/source'
import { asText, getField } from './header-values'
import type { ParsedJson } from './delivery-body'
// The guard's pointer functions (dependency-free, so applications can run them): one definition of what a rule finds.
import { parseJsonPointer, resolveJsonPointer } from '@/packages/guard/src/entity-key'
// And the guard's reading of a version: the drainer and the guards must agree on what a version is.
import { versionOf, type VersionValue } from '@/packages/guard/src/entity-version'

export { parseJsonPointer, resolveJsonPointer }

/** Longer values are payloads, not keys; grouping or pausing by them would be meaningless. */
export const MAX_ENTITY_KEY_LENGTH = 1024

export type EntityKeySource = {
  properties: unknown
  headers: unknown
  /** The JSON document a pointer applies to; null when the body is not JSON. */
  json: () => ParsedJson | null
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
  if (kind === 'property') return (ENTITY_KEY_PROPERTIES as readonly unknown[]).includes(getField(rule, 'name'))
  if (kind === 'header') return typeof getField(rule, 'name') === 'string' && getField(rule, 'name') !== ''
  if (kind === 'jsonPointer') {
    const pointer = getField(rule, 'pointer')
    return typeof pointer === 'string' && parseJsonPointer(pointer) !== null
  }
  return false
}

/** The raw value a rule points at in a delivery; undefined when there is none. */
function ruleValue(rule: EntityKeyRule, source: EntityKeySource): unknown {
  switch (rule.kind) {
    case 'property':
      return getField(source.properties, rule.name)
    case 'header':
      return getField(source.headers, rule.name)
    case 'jsonPointer': {
      const tokens = parseJsonPointer(rule.pointer)
      const parsed = source.json()
      if (!tokens || !parsed) return undefined
      return resolveJsonPointer(parsed.value, tokens)
    }
  }
}

/**
 * Applies a source's entity-key rule (docs/framework-headers.md#entity-keys). Invalid rules, bodies or values give
 * null.
 */
export function extractEntityKey(rule: EntityKeyRule | null | undefined, source: EntityKeySource): string | null {
  if (!isValidEntityKeyRule(rule)) return null
  return keyText(ruleValue(rule, source))
}

/** Whether a stored rule is a version rule this code can apply. */
export function isValidEntityVersionRule(rule: unknown): rule is EntityVersionRule {
  return entityVersionRuleSchema.safeParse(rule).success
}

/**
 * Applies a source's entity-version rule (docs/ARCHITECTURE.md#entity-versions) with the guard's own reading of a
 * value, so a version Lazarus stored compares with the one a guard reads from the live message.
 */
export function extractEntityVersion(rule: EntityVersionRule, source: EntityKeySource): VersionValue {
  return versionOf(ruleValue(rule, source), rule.type)
}
