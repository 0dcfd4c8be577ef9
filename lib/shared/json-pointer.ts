import { Pointer } from 'rfc6902'

/**
 * JSON Pointers (RFC 6901) as the body field filters take them (`b./order/customer=42`, README, "Filtering by header,
 * property, body field or x-death"). Parsing and escaping are rfc6902's (already the revision editor's patch library);
 * resolving is our own, because it must give exactly what the SQL gives (lib/server/selection/message-filter-sql.ts):
 * own members only, and an array index only as "0" or a decimal without a leading zero ("-", "01" or "-1" name nothing
 * in an array).
 */

/** "" (the whole document) or `/` tokens, `~` only as `~0` (a tilde) or `~1` (a slash). */
const POINTER = /^(?:\/(?:[^~/]|~[01])*)*$/

/** The most tokens a filter's pointer may have. */
const MAX_POINTER_TOKENS = 32
/** The longest pointer a filter takes, in characters. */
const MAX_POINTER_CHARS = 512

/** Why `pointer` is not one a body filter takes, or null when it is. */
export function pointerProblem(pointer: string): string | null {
  if (!pointer.startsWith('/')) return 'a JSON Pointer starts with "/" (e.g. /order/customer)'
  if (!POINTER.test(pointer)) return 'in a JSON Pointer "~" is written ~0 and a "/" inside a name ~1'
  if (pointer.length > MAX_POINTER_CHARS) return `a JSON Pointer has at most ${MAX_POINTER_CHARS} characters`
  if (pointerTokens(pointer).length > MAX_POINTER_TOKENS) return `a JSON Pointer has at most ${MAX_POINTER_TOKENS} levels`
  return null
}

/** The unescaped reference tokens of a valid pointer: `/a~1b/0` is ["a/b", "0"]. */
export const pointerTokens = (pointer: string): string[] => Pointer.fromJSON(pointer).tokens.slice(1)

/** The pointer of these tokens: the inverse of pointerTokens. */
export const pointerOf = (tokens: readonly string[]): string => new Pointer(['', ...tokens]).toString()

/** A token that names an array element: "0", or digits without a leading zero. */
export const isArrayIndex = (token: string): boolean => /^(?:0|[1-9][0-9]{0,8})$/.test(token)

/** What the pointer names in `document`, or undefined when it names nothing. */
export function resolvePointer(document: unknown, tokens: readonly string[]): unknown {
  let at: unknown = document
  for (const token of tokens) {
    if (Array.isArray(at)) {
      if (!isArrayIndex(token)) return undefined
      at = at[Number(token)]
    } else if (at !== null && typeof at === 'object' && Object.hasOwn(at, token)) {
      at = (at as Record<string, unknown>)[token]
    } else {
      return undefined
    }
  }
  return at
}
