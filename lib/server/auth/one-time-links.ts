import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { newSecret, secretHash } from './secret-token'

export type LinkPurpose = 'setup' | 'set-password'

/** Creates a one-time link token (kept only as its SHA-256); earlier unused links of the same purpose and user die. */
export async function createOneTimeLink({ sql, purpose, userId, validHours, replacePrevious = true }: {
  sql: Sql
  purpose: LinkPurpose
  userId: string | null
  validHours: number
  replacePrevious?: boolean
}): Promise<string> {
  const secret = newSecret()
  if (replacePrevious) await sql.query(
    `UPDATE one_time_links SET used_at = now() WHERE purpose = $1 AND user_id IS NOT DISTINCT FROM $2::bigint AND used_at IS NULL`,
    [purpose, userId],
  )
  await sql.query(`INSERT INTO one_time_links (token_hash, purpose, user_id, expires_at) VALUES ($1, $2, $3::bigint, now() + $4::float8 * interval '1 hour')`, [
    secretHash(secret),
    purpose,
    userId,
    validHours,
  ])
  return secret
}

/** Uses up a link; returns its user id (null for the setup link), or undefined when it is unknown, used or expired. */
export async function consumeOneTimeLink({ sql, purpose, secret }: { sql: Sql; purpose: LinkPurpose; secret: string }): Promise<{ userId: string | null } | undefined> {
  const { rows } = await sql.query<{ user_id: string | null }>(
    `UPDATE one_time_links SET used_at = now()
      WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > now()
      RETURNING user_id::text`,
    [secretHash(secret), purpose],
  )
  return rows[0] ? { userId: rows[0].user_id } : undefined
}
