import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { RoleBinding } from '@/lib/shared/roles'
import { touchIfDue, USER_BINDINGS_JSON } from './auth-store'
import { signedIn, type Principal } from './principal'
import { newSecret, secretHash } from './secret-token'


export type SessionLimits = { idleMinutes: number; maxHours: number }

export type CreateSessionOptions = {
  sql: Sql
  userId: string
  method: 'local' | 'oidc'
  limits: SessionLimits
  ip: string | null
  userAgent: string | null
}

/** Starts a browser session; returns the cookie value (shown nowhere else) and when the session ends at the latest. */
export async function createSession({ sql, userId, method, limits, ip, userAgent }: CreateSessionOptions): Promise<{ secret: string; expiresAt: Date }> {
  const secret = newSecret()
  const expiresAt = new Date(Date.now() + limits.maxHours * 3_600_000)
  await sql.query(
    `INSERT INTO sessions (token_hash, user_id, method, expires_at, ip, user_agent) VALUES ($1, $2::bigint, $3, $4, $5, $6)`,
    [secretHash(secret), userId, method, expiresAt, ip, userAgent?.slice(0, 512) ?? null],
  )
  await sql.query('UPDATE users SET last_sign_in_at = now() WHERE id = $1::bigint', [userId])
  return { secret, expiresAt }
}

type SessionRow = {
  id: string
  user_id: string
  email: string
  last_seen_at: Date
  bindings: RoleBinding[]
}

/**
 * The principal behind a session cookie, or null when the session is unknown, revoked, past its absolute or idle
 * limit, or its user is disabled. One indexed query; the idle clock is moved at most once a minute.
 */
export async function principalFromSession({ sql, secret, limits }: { sql: Sql; secret: string; limits: SessionLimits }): Promise<Principal | null> {
  const { rows } = await sql.query<SessionRow>(
    `SELECT s.id::text, s.user_id::text, u.email, s.last_seen_at,
            ${USER_BINDINGS_JSON} AS bindings
       FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
        AND s.last_seen_at > now() - $2::int * interval '1 minute' AND u.disabled_at IS NULL`,
    [secretHash(secret), limits.idleMinutes],
    { name: 'auth_session' },
  )
  const row = rows[0]
  if (!row) return null
  await touchIfDue({ sql, table: 'sessions', id: row.id, lastAt: row.last_seen_at })
  return signedIn({ kind: 'user', via: 'session', userId: row.user_id, email: row.email, actor: row.email, bindings: row.bindings, sessionId: row.id })
}

/** Ends a session (sign-out); ending an unknown one is not an error. */
export async function revokeSession({ sql, secret }: { sql: Sql; secret: string }): Promise<void> {
  await sql.query('UPDATE sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL', [secretHash(secret)])
}
