import 'server-only'
import type { SignedIn } from '@/lib/server/auth/principal'
import { hasPermission } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { ApiTokenDto, ApiTokenListDto } from '@/lib/shared/schemas/user'

type TokenRow = {
  id: string
  name: string
  user_id: string
  email: string
  role: ApiTokenDto['role']
  source_pattern: string | null
  scope: ApiTokenDto['scope']
  guard_vhost: string | null
  guard_queue: string | null
  expires_at: Date | null
  last_used_at: Date | null
  revoked_at: Date | null
  created_at: Date
}

const COLUMNS = `t.id::text, t.name, t.user_id::text, u.email, t.role, t.source_pattern, t.scope, t.guard_vhost, t.guard_queue,
  t.expires_at, t.last_used_at, t.revoked_at, t.created_at`

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString())

function toDto(r: TokenRow): ApiTokenDto {
  return {
    id: r.id,
    name: r.name,
    owner: { id: r.user_id, email: r.email },
    role: r.role,
    sourcePattern: r.source_pattern,
    scope: r.scope,
    guardQueue: r.guard_queue ? { vhost: r.guard_vhost ?? '/', queue: r.guard_queue } : null,
    expiresAt: iso(r.expires_at),
    lastUsedAt: iso(r.last_used_at),
    revokedAt: iso(r.revoked_at),
    createdAt: iso(r.created_at) as string,
  }
}

export async function getApiToken(sql: Sql, id: string): Promise<ApiTokenDto> {
  const { rows } = await sql.query<TokenRow>(`SELECT ${COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = $1::bigint`, [id])
  if (!rows[0]) throw notFound(`token ${id}`)
  return toDto(rows[0])
}

/** The caller's own tokens; an admin sees everyone's. Never the secret: it was shown once, at creation. */
export async function listApiTokens({ db, principal }: { db: Db; principal: SignedIn }): Promise<ApiTokenListDto> {
  const all = hasPermission(principal, 'admin')
  const { rows } = await db.sql.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id
      WHERE ($1 OR t.user_id = $2::bigint)
      ORDER BY t.revoked_at IS NOT NULL, t.created_at DESC LIMIT 2000`,
    [all, principal.userId],
  )
  return { tokens: rows.map(toDto) }
}
