import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect } from 'vitest'

/**
 * The guard protocol's fixtures (tests/fixtures/guard-protocol; docs/ARCHITECTURE.md#pause-hold-release, "The guard
 * package"): per guard version (`1.x`, `2.0.x`, …), JSON files of what such a guard sends and what Lazarus answers.
 * A file a version's folder lacks is the same as in the version before it. Strings stand for values a run decides:
 * `"{{name}}"` is the value `name` (a number stays a number), `"…{{name}}…"` its text, and `{{any-time}}`,
 * `{{any-uuid}}`, `{{any-number}}` match any ISO time, UUID or number.
 */
export const GUARD_PROTOCOL_DIR = path.resolve(import.meta.dirname, '../fixtures/guard-protocol')

/** The folder of a guard version: `2.2.0` → `2.2.x`; guards before 2.0 are all `1.x`. */
export function protocolFolder(guardVersion: string): string {
  const [major, minor] = guardVersion.split('.')
  return Number(major) < 2 ? '1.x' : `${major}.${minor}.x`
}

const rank = (folder: string) => folder.split('.').slice(0, 2).map((part) => (part === 'x' ? -1 : Number(part)))

/** The versions that have a folder, oldest first. */
export function protocolVersions(): string[] {
  return readdirSync(GUARD_PROTOCOL_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort((a, b) => {
      const [ra, rb] = [rank(a), rank(b)]
      return ra[0] - rb[0] || ra[1] - rb[1]
    })
}

export type Fixture<T = Record<string, unknown>> = { version: string; file: string; value: T }

/** A version's fixture `name`: its own, or the one of the nearest version before it; null when none has one. */
export function protocolFixture<T = Record<string, unknown>>(version: string, name: string): Fixture<T> | null {
  const versions = protocolVersions()
  for (let i = versions.indexOf(version); i >= 0; i--) {
    const file = path.join(GUARD_PROTOCOL_DIR, versions[i], name)
    if (existsSync(file)) return { version: versions[i], file: path.relative(GUARD_PROTOCOL_DIR, file), value: JSON.parse(readFileSync(file, 'utf8')) as T }
  }
  return null
}

const MATCHERS: Record<string, () => unknown> = {
  'any-time': () => expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/),
  'any-uuid': () => expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  'any-number': () => expect.any(Number),
}

/** The fixture with this run's values in place of its `{{…}}`; a name without a value is an error. */
export function fill(template: unknown, values: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = /^\{\{([a-z-]+|[A-Za-z]+)\}\}$/.exec(template)
    if (whole && MATCHERS[whole[1]]) return MATCHERS[whole[1]]()
    const value = (name: string) => {
      if (!(name in values)) throw new Error(`the fixture names {{${name}}}, which the test does not give`)
      return values[name]
    }
    if (whole) return value(whole[1])
    return template.replace(/\{\{([A-Za-z]+)\}\}/g, (_, name: string) => String(value(name)))
  }
  if (Array.isArray(template)) return template.map((item) => fill(item, values))
  if (template !== null && typeof template === 'object') return Object.fromEntries(Object.entries(template).map(([key, item]) => [key, fill(item, values)]))
  return template
}

/** A filled request's query or headers as an HTTP message carries them: every value as text. */
export const asText = (record: unknown): Record<string, string> => Object.fromEntries(Object.entries(record as Record<string, unknown>).map(([key, value]) => [key, String(value)]))
