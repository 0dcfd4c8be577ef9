import { ROLES, SOURCE_PATTERN_RE, type Role, type RoleBinding } from '@/lib/shared/roles'

export type GroupRole = { group: string; role: Role; sourcePattern: string | null }

/**
 * `LAZARUS_GROUP_ROLES`: entries separated by `;` or newlines, each `group=role` or `group=role:pattern`. Group names
 * may contain `=` and `,` (LDAP DNs such as `cn=ops,ou=groups,dc=example`), so the last `=` separates.
 */
export function parseGroupRoles(raw: string): GroupRole[] {
  const out: GroupRole[] = []
  for (const entry of raw.split(/[;\n]/).map((e) => e.trim()).filter(Boolean)) {
    const eq = entry.lastIndexOf('=')
    if (eq <= 0) throw new Error(`"${entry}": expected group=role or group=role:pattern`)
    const group = entry.slice(0, eq).trim()
    const [role, ...rest] = entry.slice(eq + 1).trim().split(':')
    const pattern = rest.length > 0 ? rest.join(':').trim() : null
    if (!ROLES.includes(role as Role)) throw new Error(`"${entry}": role must be one of ${ROLES.join(', ')}`)
    if (pattern !== null && !SOURCE_PATTERN_RE.test(pattern)) throw new Error(`"${entry}": "${pattern}" is not a queue pattern`)
    if (role === 'admin' && pattern !== null) throw new Error(`"${entry}": admin cannot be limited to some sources`)
    out.push({ group, role: role as Role, sourcePattern: pattern })
  }
  return out
}

/** The bindings a user with these groups gets. Group names compare exactly (case matters in most directories). */
export function bindingsForGroups(groups: readonly string[], mapping: readonly GroupRole[]): RoleBinding[] {
  const have = new Set(groups)
  const seen = new Set<string>()
  const out: RoleBinding[] = []
  for (const m of mapping) {
    if (!have.has(m.group)) continue
    const key = `${m.role}\u0000${m.sourcePattern ?? ''}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push({ role: m.role, sourcePattern: m.sourcePattern })
  }
  return out
}
