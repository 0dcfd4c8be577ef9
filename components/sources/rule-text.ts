import { visibleText } from '@/lib/client/format'
import type { SourceDto } from '@/lib/shared/schemas/source'

/** A source's entity-key rule in a few words ("—" without one: Lazarus and guards read the x-entity-key header). */
export function ruleText(rule: SourceDto['entityKey']): string {
  if (!rule) return '—'
  if (rule.kind === 'property') return `property ${rule.name}`
  if (rule.kind === 'header') return `header ${visibleText(rule.name)}`
  return `body ${visibleText(rule.pointer)}`
}

/** A source's version rule in a few words, e.g. "version: body /rev (number)"; null without one. */
export function versionRuleText(rule: SourceDto['entityVersion']): string | null {
  return rule ? `version: ${ruleText(rule)} (${rule.type === 'time' ? 'ISO time' : 'number'})` : null
}
