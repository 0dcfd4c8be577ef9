import { ruleValue, type KeyedMessage } from './entity-key'
import type { EntityVersionRule } from './protocol'

/**
 * Entity versions (docs/ARCHITECTURE.md#entity-versions): where a message says which version of its entity it
 * carries, read the same way by Lazarus' drainer (which stores it as dead_letters.entity_version) and by the guard
 * (which drops a replayed copy older than what it already let through). One definition, here, since the guard may
 * import nothing of Lazarus.
 */

/** A rule found a value, but it does not read as a version of the rule's type. */
export const UNPARSABLE = 'unparsable' as const
export type VersionValue = number | typeof UNPARSABLE | null

const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/
/**
 * ISO 8601 / RFC 3339: a date, or a date and time with an explicit zone. A time without a zone is refused: JavaScript
 * would read it in the process's own zone, so two machines would disagree on the version.
 */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)([Zz]|[+-]\d{2}(?::?\d{2})?))?$/
const utf8 = new TextDecoder('utf-8')

function isoTime(text: string): number | null {
  const m = ISO_TIME.exec(text)
  if (!m) return null
  const [, date, time, zone] = m
  let normal = date
  if (time !== undefined) {
    const offset = zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`
    // Milliseconds are what epoch times compare on: finer digits are cut, not rounded (both sides cut the same way).
    normal = `${date}T${time.replace(',', '.').replace(/(\.\d{3})\d+$/, '$1')}${offset}`
  }
  const ms = Date.parse(normal)
  return Number.isFinite(ms) ? ms : null
}

/**
 * A raw value as a version of the given type: numbers (also numeric text, int64 as bigint) for `number`; ISO 8601 text
 * (epoch milliseconds) or a Date for `time`. null: there is no value; UNPARSABLE: there is one, but it is not a version.
 */
export function versionOf(raw: unknown, type: EntityVersionRule['type']): VersionValue {
  let value = raw
  // amqplib wraps some typed values as { '!': tag, value }.
  if (value !== null && typeof value === 'object' && !(value instanceof Uint8Array) && !(value instanceof Date) && Object.hasOwn(value, '!') && Object.hasOwn(value, 'value')) {
    value = (value as { value: unknown }).value
  }
  if (value === undefined || value === null) return null
  if (value instanceof Uint8Array) value = utf8.decode(value)
  if (type === 'number') {
    if (typeof value === 'number') return Number.isFinite(value) ? value : UNPARSABLE
    if (typeof value === 'bigint') return Number(value)
    if (typeof value === 'string') {
      const text = value.trim()
      if (!NUMBER.test(text)) return UNPARSABLE
      const n = Number(text)
      return Number.isFinite(n) ? n : UNPARSABLE
    }
    return UNPARSABLE
  }
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.getTime() : UNPARSABLE
  if (typeof value === 'string') return isoTime(value.trim()) ?? UNPARSABLE
  return UNPARSABLE
}

/** The version a message carries under a rule (the guard's side; the drainer reads its own decoded values). */
export function extractEntityVersion(rule: EntityVersionRule, message: KeyedMessage): VersionValue {
  return versionOf(ruleValue(rule, message), rule.type)
}

/** How a version reads to a person: the number, or the ISO time for a `time` rule. */
export function formatVersion(version: number, type: EntityVersionRule['type'] | null | undefined): string {
  if (type === 'time') {
    const date = new Date(version)
    if (Number.isFinite(date.getTime())) return date.toISOString()
  }
  return String(version)
}

export type VersionWindowOptions = {
  /** Entities remembered at most; the one updated longest ago is forgotten first. Default 10,000. */
  maxEntities?: number
  /** How long a version is remembered after it was last raised. Default 60 minutes. */
  windowMs?: number
  now?: () => number
}

/**
 * The highest version a guard let through, per entity, in a bounded window: at most `maxEntities` entities, each for
 * `windowMs` after it was last raised (LRU on updates). What falls out of the window is forgotten: a replayed copy
 * older than a version processed before the window is let through (the README says so).
 */
export class VersionWindow {
  private readonly entries = new Map<string, { version: number; at: number }>()
  readonly maxEntities: number
  readonly windowMs: number
  private readonly now: () => number

  constructor(options: VersionWindowOptions = {}) {
    this.maxEntities = Math.max(1, Math.floor(options.maxEntities ?? 10_000))
    this.windowMs = Math.max(0, options.windowMs ?? 60 * 60_000)
    this.now = options.now ?? Date.now
  }

  get size(): number {
    this.expire()
    return this.entries.size
  }

  /** The highest version remembered for the entity; null when none (never seen, or out of the window). */
  highest(entityKey: string): number | null {
    this.expire()
    return this.entries.get(entityKey)?.version ?? null
  }

  /** Records that `version` was let through; keeps the higher of it and what was remembered. */
  remember(entityKey: string, version: number): void {
    const at = this.now()
    const known = this.entries.get(entityKey)
    const highest = known && known.at + this.windowMs > at ? Math.max(known.version, version) : version
    // Delete and set again: a Map iterates in insertion order, so the first entry is always the one updated longest ago.
    this.entries.delete(entityKey)
    this.entries.set(entityKey, { version: highest, at })
    while (this.entries.size > this.maxEntities) this.entries.delete(this.entries.keys().next().value as string)
  }

  private expire(): void {
    const oldest = this.now() - this.windowMs
    for (const [key, entry] of this.entries) {
      if (entry.at > oldest) break
      this.entries.delete(key)
    }
  }
}
