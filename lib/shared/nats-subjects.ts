/**
 * NATS subject wildcards (docs/jetstream.md): tokens separated by dots, `*` matching one token and `>` (last) one or
 * more. Pure, so the replay plan, the doctor and their tests share one reading of them.
 */

/** Whether `subject` (a literal subject) is matched by `filter` (a subject that may hold wildcards). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split('.')
  const s = subject.split('.')
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return i === f.length - 1 && s.length > i
    if (i >= s.length) return false
    if (f[i] !== '*' && f[i] !== s[i]) return false
  }
  return f.length === s.length
}

/** Whether some subject is matched by both filters (two streams may not capture overlapping subjects). */
export function subjectsOverlap(a: string, b: string): boolean {
  const x = a.split('.')
  const y = b.split('.')
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] === '>' || y[i] === '>') return i < x.length && i < y.length
    if (i >= x.length || i >= y.length) return false
    if (x[i] !== '*' && y[i] !== '*' && x[i] !== y[i]) return false
  }
  return true
}

/**
 * A PostgreSQL regular expression matching the literal subjects `filter` matches (its wildcards); null when the filter
 * has none (compare with =, which an index can serve).
 */
export function subjectFilterRegex(filter: string): string | null {
  const tokens = filter.split('.')
  if (!tokens.some((t) => t === '*' || t === '>')) return null
  const escape = (token: string) => token.replace(/[\\^$.|?*+()[\]{}-]/g, (c) => `\\${c}`)
  return `^${tokens.map((t, i) => (t === '*' ? '[^.]+' : t === '>' && i === tokens.length - 1 ? '.+' : escape(t))).join('\\.')}$`
}
