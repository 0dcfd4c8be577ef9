import 'server-only'
import { globFragments, normalizeKey } from '@/lib/shared/schemas/redaction'

const escapeRegex = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&')

export type KeyMatcher = {
  /** True when a key of this name holds a secret. */
  matches(key: string): boolean
}

const NEVER: KeyMatcher = { matches: () => false }
const CACHE_LIMIT = 20_000

/** Compiles key globs (`*` = any run of characters) into one anchored regex over normalised names, with a cache. */
export function compileKeyMatcher(globs: readonly string[]): KeyMatcher {
  const usable = globs.filter((g) => globFragments(g).length > 0)
  if (usable.length === 0) return NEVER
  const full = new RegExp(`^(?:${usable.map((g) => normalizeKey(g).split('*').map(escapeRegex).join('.*')).join('|')})$`, 's')
  const cache = new Map<string, boolean>()
  return {
    matches(key) {
      let hit = cache.get(key)
      if (hit === undefined) {
        hit = full.test(normalizeKey(key))
        if (cache.size >= CACHE_LIMIT) cache.clear()
        cache.set(key, hit)
      }
      return hit
    },
  }
}
