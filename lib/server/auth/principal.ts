import 'server-only'
import { PERMISSIONS, SOURCE_BOUND, atLeast, type Permission, type Role, type RoleBinding } from '@/lib/shared/roles'

/**
 * Who is calling. `actor` is what the audit log and the `x-lazarus-replayed-by` header name: the user's e-mail
 * address, or the token and its owner. It never comes from a value the client typed.
 */
export type Principal =
  | { kind: 'anonymous' }
  | {
      kind: 'user' | 'token'
      /** How the caller proved it: a session cookie, a bearer token, or a trusted authenticating proxy. */
      via: 'session' | 'bearer' | 'proxy'
      userId: string | null
      email: string | null
      actor: string
      bindings: RoleBinding[]
      /** A token limited to one purpose: `metrics` (GET /api/metrics) or `guard` (its queue's pauses). */
      scope: 'metrics' | 'guard' | null
      guardQueue: { vhost: string; queue: string } | null
      sessionId: string | null
      tokenId: string | null
    }

export type SignedIn = Exclude<Principal, { kind: 'anonymous' }>

export const ANONYMOUS: Principal = { kind: 'anonymous' }

/**
 * A signed-in principal; what a caller leaves out is null (no scope, no guard queue, no session or token behind it).
 */
export function signedIn(
  who: Pick<SignedIn, 'kind' | 'via' | 'userId' | 'email' | 'actor' | 'bindings'> & Partial<Pick<SignedIn, 'scope' | 'guardQueue' | 'sessionId' | 'tokenId'>>,
): SignedIn {
  return { scope: null, guardQueue: null, sessionId: null, tokenId: null, ...who }
}

export const isSignedIn = (p: Principal): p is SignedIn => p.kind !== 'anonymous'

/** Whether a binding grants `permission` on every source (no pattern). */
function grantsEverywhere(binding: RoleBinding, needed: Role): boolean {
  return binding.sourcePattern === null && atLeast(binding.role, needed)
}

/**
 * Whether the caller holds `permission` at all (on at least one source, for source-bound permissions). Routes
 * check this; the operation then limits itself to `allowedSources` for source-bound ones.
 */
export function hasPermission(p: Principal, permission: Permission): boolean {
  const needed = PERMISSIONS[permission]
  if (needed === null) return true
  if (!isSignedIn(p)) return false
  if (p.scope === 'metrics') return permission === 'metrics'
  if (p.scope === 'guard') return permission === 'guard'
  if (SOURCE_BOUND.has(permission)) return p.bindings.some((b) => atLeast(b.role, needed))
  return p.bindings.some((b) => grantsEverywhere(b, needed))
}

/**
 * The source patterns under which the caller holds `permission`: null when it holds it on every source, else the
 * patterns (possibly none). Operations turn this into source ids (lib/server/auth/source-access.ts).
 */
export function permittedPatterns(p: Principal, permission: Permission): string[] | null {
  const needed = PERMISSIONS[permission]
  if (needed === null) return null
  if (!isSignedIn(p) || p.scope) return []
  if (p.bindings.some((b) => grantsEverywhere(b, needed))) return null
  return p.bindings.filter((b) => atLeast(b.role, needed) && b.sourcePattern !== null).map((b) => b.sourcePattern as string)
}
