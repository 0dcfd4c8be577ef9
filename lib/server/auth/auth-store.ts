import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'

/**
 * The SQL of signing in: local accounts and the first admin, brute-force counters, OpenID Connect flows. It stays SQL
 * (docs/decisions/0012-db-in-options-prisma-for-crud.md): it runs inside the sign-in transactions under advisory and
 * row locks. The rest of auth's SQL sits with its one concern: sessions (sessions.ts) and API tokens (api-tokens.ts),
 * looked up on every request; one-time links (one-time-links.ts); single sign-on and proxy users
 * (external-users.ts); the sources a role pattern covers (source-access.ts).
 */

export async function anyUser({ sql }: { sql: Sql }): Promise<boolean> {
  const { rows } = await sql.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users) AS any')
  return rows[0].any
}

export async function countUsers({ sql }: { sql: Sql }): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM users')
  return rows[0].n
}

// Any constant works; it only has to be the same in every Lazarus process sharing a database.
const FIRST_RUN_LOCK_KEY = 7_203_114_452

/** Serialises the first-run checks of processes starting at once; held until the transaction ends. PGlite has one process. */
export async function lockFirstRun({ sql }: { sql: Sql }): Promise<void> {
  if (sql.kind === 'postgres') await sql.query('SELECT pg_advisory_xact_lock($1)', [FIRST_RUN_LOCK_KEY])
}

export async function insertAdmin({ sql, email, displayName, passwordHash }: { sql: Sql; email: string; displayName: string | null; passwordHash: string }): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO users (email, display_name, auth_source, password_hash) VALUES ($1, $2, 'local', $3) RETURNING id::text`,
    [email, displayName, passwordHash],
  )
  const id = rows[0].id
  await sql.query(`INSERT INTO role_bindings (user_id, role, source_pattern, origin) VALUES ($1::bigint, 'admin', NULL, 'manual')`, [id])
  return id
}

/** Sets an enabled user's password; returns their address, or null when the user is disabled (or gone). */
export async function setPasswordHash({ sql, userId, passwordHash }: { sql: Sql; userId: string; passwordHash: string }): Promise<string | null> {
  const { rows } = await sql.query<{ email: string }>(
    `UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1::bigint AND disabled_at IS NULL RETURNING email`,
    [userId, passwordHash],
  )
  return rows[0]?.email ?? null
}

export type LocalAccount = { id: string; email: string; password_hash: string | null; disabled: boolean }

export async function findAccountByEmail({ sql, email }: { sql: Sql; email: string }): Promise<LocalAccount | undefined> {
  const { rows } = await sql.query<LocalAccount>(
    `SELECT id::text, email, password_hash, disabled_at IS NOT NULL AS disabled FROM users WHERE lower(email) = lower($1)`,
    [email],
  )
  return rows[0]
}

export async function recordSignInAttempt({ sql, email, ip, succeeded }: { sql: Sql; email: string; ip: string; succeeded: boolean }): Promise<void> {
  await sql.query('INSERT INTO sign_in_attempts (email, ip, succeeded) VALUES ($1, $2, $3)', [email, ip, succeeded])
}

export type FailedAttempts = { n: number; oldest: Date | null }

/** Failed attempts of one account (`email`) or one address (`ip`) in the last `windowMinutes`, at most `limit` counted. */
export async function recentFailedAttempts({ sql, by, value, windowMinutes, limit }: {
  sql: Sql
  by: 'email' | 'ip'
  value: string
  windowMinutes: number
  limit: number
}): Promise<FailedAttempts> {
  const where = by === 'email' ? 'lower(email) = lower($1)' : 'ip = $1'
  const { rows } = await sql.query<FailedAttempts>(
    `SELECT count(*)::int AS n, min(at) AS oldest FROM (
       SELECT at FROM sign_in_attempts WHERE ${where} AND NOT succeeded AND at > now() - $2::int * interval '1 minute'
       ORDER BY at DESC LIMIT $3) recent`,
    [value, windowMinutes, limit],
  )
  return rows[0]
}

export type OidcFlow = { state: string; browserHash: Buffer; nonce: string; codeVerifier: string; returnTo: string }

/** Remembers a started sign-in for `minutes` (and forgets the expired ones). */
export async function saveOidcFlow({ sql, flow, minutes }: { sql: Sql; flow: OidcFlow; minutes: number }): Promise<void> {
  await sql.query('DELETE FROM oidc_flows WHERE expires_at < now()')
  await sql.query(
    `INSERT INTO oidc_flows (state, browser_hash, nonce, code_verifier, return_to, expires_at) VALUES ($1, $2, $3, $4, $5, now() + $6::int * interval '1 minute')`,
    [flow.state, flow.browserHash, flow.nonce, flow.codeVerifier, flow.returnTo, minutes],
  )
}

/** Takes (uses up) the unexpired flow of `state`, if any: a flow completes once. */
export async function takeOidcFlow({ sql, state }: { sql: Sql; state: string }): Promise<Omit<OidcFlow, 'state'> | undefined> {
  const { rows } = await sql.query<{ nonce: string; code_verifier: string; return_to: string; browser_hash: Buffer }>(
    `DELETE FROM oidc_flows WHERE state = $1 AND expires_at > now() RETURNING nonce, code_verifier, return_to, browser_hash`,
    [state],
  )
  const row = rows[0]
  return row && { nonce: row.nonce, codeVerifier: row.code_verifier, returnTo: row.return_to, browserHash: Buffer.from(row.browser_hash) }
}

const TOUCH_STATEMENTS = {
  sessions: 'UPDATE sessions SET last_seen_at = now() WHERE id = $1::bigint',
  api_tokens: 'UPDATE api_tokens SET last_used_at = now() WHERE id = $1::bigint',
} as const

/**
 * Records that a session or token was used, at most once a minute, so a busy dashboard or script does not write a
 * row version per request.
 */
export async function touchIfDue({ sql, table, id, lastAt }: { sql: Sql; table: keyof typeof TOUCH_STATEMENTS; id: string; lastAt: Date | string | null }): Promise<void> {
  if (lastAt !== null && Date.now() - new Date(lastAt).getTime() <= 60_000) return
  await sql.query(TOUCH_STATEMENTS[table], [id])
}

/** The select-list expression giving a user's role bindings as JSON, for the lookups that run on every request. */
export const USER_BINDINGS_JSON = `coalesce((SELECT json_agg(json_build_object('role', b.role, 'sourcePattern', b.source_pattern))
                        FROM role_bindings b WHERE b.user_id = u.id), '[]'::json)`
