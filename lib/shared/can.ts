import { PERMISSIONS, SOURCE_BOUND, atLeast, type Permission, type RoleBinding } from './roles'

/**
 * What the browser shows a user: whether any of their bindings grants `permission` (on some source, for
 * source-bound permissions). The server's check (lib/server/auth/principal.ts) is the one that counts.
 */
export function bindingsAllow(bindings: readonly RoleBinding[], permission: Permission): boolean {
  const needed = PERMISSIONS[permission]
  if (needed === null) return true
  if (SOURCE_BOUND.has(permission)) return bindings.some((b) => atLeast(b.role, needed))
  return bindings.some((b) => b.sourcePattern === null && atLeast(b.role, needed))
}
