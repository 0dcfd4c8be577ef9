import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { atLeast, sourcePatternMatches, type Role, type RoleBinding } from '@/lib/shared/roles'
import { touchIfDue, USER_BINDINGS_JSON } from './auth-store'
import { signedIn, type Principal } from './principal'
import { sameHash, secretHash } from './secret-token'


export const API_TOKEN_PREFIX = 'lzr_'

export type TokenGrant = {
  role: Role | null
  sourcePattern: string | null
  scope: 'metrics' | 'guard' | null
  guardQueue: string | null
}

/**
 * Whether an owner with these bindings may hold a token with this grant. Checked when the token is created and at
 * every use, so a token dies when its owner loses the role it was created under (docs/security.md).
 * - a role token needs a binding of at least that role covering its pattern (an unscoped token, an unscoped binding);
 * - a metrics token needs an unscoped admin;
 * - a guard token needs an operator on a pattern matching the guard's queue.
 */
export function ownerMayHold(bindings: readonly RoleBinding[], grant: TokenGrant): boolean {
  if (grant.scope === 'metrics') return bindings.some((b) => b.role === 'admin' && b.sourcePattern === null)
  if (grant.scope === 'guard') {
    return bindings.some((b) => atLeast(b.role, 'operator') && sourcePatternMatches(b.sourcePattern, grant.guardQueue ?? ''))
  }
  if (!grant.role) return false
  return bindings.some(
    (b) => atLeast(b.role, grant.role as Role) && (b.sourcePattern === null || b.sourcePattern === grant.sourcePattern),
  )
}

type TokenRow = {
  id: string
  name: string
  user_id: string
  email: string
  role: Role | null
  source_pattern: string | null
  scope: 'metrics' | 'guard' | null
  guard_vhost: string | null
  guard_queue: string | null
  last_used_at: Date | null
  bindings: RoleBinding[]
}

/**
 * The principal behind a bearer token from the api_tokens table, or null when it is unknown, revoked, expired, its
 * owner is disabled, or its owner no longer holds what the token grants.
 */
export async function principalFromApiToken({ sql, secret }: { sql: Sql; secret: string }): Promise<Principal | null> {
  if (!secret.startsWith(API_TOKEN_PREFIX)) return null
  const { rows } = await sql.query<TokenRow>(
    `SELECT t.id::text, t.name, t.user_id::text, u.email, t.role, t.source_pattern, t.scope, t.guard_vhost, t.guard_queue,
            t.last_used_at,
            ${USER_BINDINGS_JSON} AS bindings
       FROM api_tokens t JOIN users u ON u.id = t.user_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
        AND u.disabled_at IS NULL`,
    [secretHash(secret)],
    { name: 'auth_api_token' },
  )
  const row = rows[0]
  if (!row) return null
  const grant: TokenGrant = { role: row.role, sourcePattern: row.source_pattern, scope: row.scope, guardQueue: row.guard_queue }
  if (!ownerMayHold(row.bindings, grant)) return null
  await touchIfDue({ sql, table: 'api_tokens', id: row.id, lastAt: row.last_used_at })
  return signedIn({
    kind: 'token',
    via: 'bearer',
    userId: row.user_id,
    email: row.email,
    actor: `${row.email} (token "${row.name}")`,
    bindings: row.role ? [{ role: row.role, sourcePattern: row.source_pattern }] : [],
    scope: row.scope,
    guardQueue: row.scope === 'guard' ? { vhost: row.guard_vhost ?? '/', queue: row.guard_queue ?? '' } : null,
    tokenId: row.id,
  })
}

/** The admin token from the environment (LAZARUS_ADMIN_TOKEN or its SHA-256), for provisioning without clicks. */
export function principalFromAdminToken(secret: string, expected: Buffer | null): Principal | null {
  if (!expected || !sameHash(secretHash(secret), expected)) return null
  return signedIn({ kind: 'token', via: 'bearer', userId: null, email: null, actor: 'LAZARUS_ADMIN_TOKEN', bindings: [{ role: 'admin', sourcePattern: null }] })
}
