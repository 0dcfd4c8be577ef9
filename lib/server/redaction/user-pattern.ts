import 'server-only'
import { RE2JS } from 're2js'

/**
 * Operators' own patterns run on RE2 (re2js, pure JavaScript): matching is linear in the input whatever the pattern,
 * so no pattern can make an export, a ticket or a preview spin (V8's backtracking engine took seconds on `(a|a)*b`
 * over 29 characters, and no static check catches every such pattern). The price is RE2's syntax: no backreferences,
 * no lookaround.
 */
export type UserPattern = { readonly source: string; readonly regex: RE2JS }

/** Why a pattern cannot be compiled, worded for the operator who wrote it. */
export class PatternCompileError extends Error {
  override name = 'PatternCompileError'
  constructor(
    readonly source: string,
    reason: string,
  ) {
    super(reason)
  }
}

// RE2 states its errors in terms of its parser ("invalid named capture: `(?<=`"); these tell what to change. An
// escaped backslash or parenthesis in front (`\\1`, `\(?=`) is no backreference or lookaround.
const BACKREFERENCE = /(?<!\\)(?:\\\\)*\\(?:[1-9]|k<)/
const LOOKAROUND = /(?<!\\)(?:\\\\)*\(\?<?[=!]/
// A program this large is a pattern nobody means (`(?:[a-z]{1000}){20}`): it would cost memory on every string.
const MAX_PROGRAM_SIZE = 20_000

export function compileUserPattern(source: string): UserPattern {
  // Checked before translating: the translation reads `\k<name>` and `\8` as the literal text JavaScript gives them
  // without named or numbered groups, which would quietly change what the pattern matches.
  if (BACKREFERENCE.test(source)) throw new PatternCompileError(source, 'backreferences (\\1, \\k<name>) are not supported: patterns run on a linear-time engine (RE2)')
  let regex: RE2JS
  try {
    // JavaScript spellings RE2 lacks (\u0041, (?<name>…)) are translated first: patterns are written as in JavaScript.
    regex = RE2JS.compile(RE2JS.translateRegExp(source), RE2JS.CASE_INSENSITIVE)
  } catch (error) {
    if (LOOKAROUND.test(source)) throw new PatternCompileError(source, 'lookaround ((?=, (?!, (?<=, (?<!) is not supported: patterns run on a linear-time engine (RE2)')
    throw new PatternCompileError(source, `not a valid regular expression: ${(error as Error).message.replace(/^error parsing regexp: /, '')}`)
  }
  if (regex.programSize() > MAX_PROGRAM_SIZE) throw new PatternCompileError(source, 'the pattern is too large (its repetitions multiply); simplify it')
  return { source, regex }
}

/** True when the pattern matches the empty string: it would "match" between every two characters. */
export const matchesEmpty = (pattern: UserPattern) => pattern.regex.test('')

/**
 * Every non-empty match of the pattern in `text` replaced (`replacement` receives the match's length); the same
 * string when nothing matched. A quick DFA test comes first: most strings match no pattern at all.
 */
export function replaceUserPattern(pattern: UserPattern, text: string, replacement: (length: number) => string): string {
  if (!pattern.regex.test(text)) return text
  const matcher = pattern.regex.matcher(text)
  let out = ''
  let copied = 0
  while (matcher.find()) {
    const start = matcher.start()
    const end = matcher.end()
    if (end === start) continue
    out += text.slice(copied, start) + replacement(end - start)
    copied = end
  }
  return copied === 0 ? text : out + text.slice(copied)
}
