/**
 * Roles and what each may do (docs/security.md). Shared by the server (route checks) and the browser (which
 * buttons to show); the server decides, the browser only follows.
 */

export const ROLES = ['viewer', 'operator', 'admin'] as const
export type Role = (typeof ROLES)[number]

export const ROLE_RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 }

export const atLeast = (role: Role, needed: Role) => ROLE_RANK[role] >= ROLE_RANK[needed]

/**
 * Every permission a route can declare, and the least role that holds it. Source-bound permissions apply per
 * source: a binding limited to `billing.*` grants them on those sources only.
 * - `public`: anyone, signed in or not (the health probe's bare status, the sign-in endpoints).
 * - `signed-in`: any signed-in user or token with a role (their own profile, tokens and sign-out).
 * - `metrics`: a signed-in admin, or a token with the `metrics` scope.
 * - `guard`: a pause guard's token (its own queue's pauses), or anyone who may read pauses.
 * - `audit:read` and `alerts:read` are not limited by source: the log tells of every source, so a binding limited to some sources does
 *   not open it.
 * - `topology:read` (the broker's graph and the doctor's findings) and `topology:write` (acknowledging a finding,
 *   running the doctor now) are not limited by source either: the graph names every queue of the vhost.
 */
export const PERMISSIONS = {
  public: null,
  'signed-in': 'viewer',
  'messages:read': 'viewer',
  'messages:raw': 'operator',
  'messages:replay': 'operator',
  // Approving or rejecting another person's replay (docs/security.md#four-eyes); source-bound like replaying.
  'replays:approve': 'operator',
  'messages:resolve': 'operator',
  // Writing a revision of a message (edit and replay); the stored message itself never changes.
  'messages:edit': 'operator',
  'groups:triage': 'operator',
  'pauses:read': 'viewer',
  'pauses:write': 'operator',
  'audit:read': 'operator',
  'alerts:read': 'viewer',
  'sources:read': 'viewer',
  'topology:read': 'viewer',
  'topology:write': 'operator',
  admin: 'admin',
  metrics: 'admin',
  guard: 'viewer',
} as const satisfies Record<string, Role | null>

export type Permission = keyof typeof PERMISSIONS

/** Permissions whose grant can be limited to some sources by a binding's pattern. */
export const SOURCE_BOUND: ReadonlySet<Permission> = new Set([
  // Any role on any source: a user limited to billing.* is signed in too.
  'signed-in',
  'guard',
  'messages:read',
  'messages:raw',
  'messages:replay',
  'replays:approve',
  'messages:resolve',
  'messages:edit',
  'groups:triage',
  'pauses:read',
  'pauses:write',
  'sources:read',
])

export type RoleBinding = { role: Role; sourcePattern: string | null }

/** `billing.*` → matches billing.dlq and billing.orders.dlq; `*` alone matches everything; no other wildcards. */
export function sourcePatternMatches(pattern: string | null, queue: string): boolean {
  if (pattern === null || pattern === '*') return true
  const parts = pattern.split('*')
  if (parts.length === 1) return pattern === queue
  let at = 0
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]
    if (i === 0) {
      if (!queue.startsWith(part)) return false
      at = part.length
    } else if (i === parts.length - 1) {
      return queue.length - part.length >= at && queue.endsWith(part)
    } else {
      const found = queue.indexOf(part, at)
      if (found < 0) return false
      at = found + part.length
    }
  }
  return true
}

export const SOURCE_PATTERN_RE = /^[A-Za-z0-9_.:*\-/]{1,255}$/
