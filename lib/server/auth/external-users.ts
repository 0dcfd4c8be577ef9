import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { RoleBinding } from '@/lib/shared/roles'

export type ExternalIdentity = {
  email: string
  displayName: string | null
  source: 'oidc' | 'proxy'
  oidc?: { issuer: string; subject: string }
  /** Bindings from the identity provider's groups (LAZARUS_GROUP_ROLES). */
  groupBindings: RoleBinding[]
}

export type ExternalUser = { id: string; email: string; disabled: boolean; bindings: RoleBinding[]; created: boolean }

/**
 * Finds or creates the user an identity provider vouched for, and replaces its group-derived role bindings with the
 * ones its groups give now (bindings an admin set by hand stay). OpenID Connect users are found by issuer and
 * subject (an e-mail address can change hands), proxy users by e-mail address.
 */
export async function upsertExternalUser({ sql, identity }: { sql: Sql; identity: ExternalIdentity }): Promise<ExternalUser> {
  return sql.transaction(async (tx) => {
    const found = identity.oidc
      ? await tx.query<{ id: string; disabled: boolean }>(
          `SELECT id::text, disabled_at IS NOT NULL AS disabled FROM users WHERE oidc_issuer = $1 AND oidc_subject = $2 FOR UPDATE`,
          [identity.oidc.issuer, identity.oidc.subject],
        )
      : await tx.query<{ id: string; disabled: boolean }>(
          `SELECT id::text, disabled_at IS NOT NULL AS disabled FROM users WHERE lower(email) = lower($1) FOR UPDATE`,
          [identity.email],
        )
    let id = found.rows[0]?.id
    const disabled = found.rows[0]?.disabled ?? false
    let created = false
    if (id) {
      await tx.query(`UPDATE users SET email = $2, display_name = coalesce($3, display_name), updated_at = now() WHERE id = $1::bigint`, [
        id,
        identity.email,
        identity.displayName,
      ])
    } else {
      const inserted = await tx.query<{ id: string }>(
        `INSERT INTO users (email, display_name, auth_source, oidc_issuer, oidc_subject) VALUES ($1, $2, $3, $4, $5) RETURNING id::text`,
        [identity.email, identity.displayName, identity.source, identity.oidc?.issuer ?? null, identity.oidc?.subject ?? null],
      )
      id = inserted.rows[0].id
      created = true
    }
    await tx.query(`DELETE FROM role_bindings WHERE user_id = $1::bigint AND origin = 'group'`, [id])
    if (identity.groupBindings.length > 0) {
      await tx.query(
        `INSERT INTO role_bindings (user_id, role, source_pattern, origin)
         SELECT $1::bigint, r, nullif(p, ''), 'group' FROM unnest($2::text[], $3::text[]) AS x(r, p)
         ON CONFLICT DO NOTHING`,
        [id, identity.groupBindings.map((b) => b.role), identity.groupBindings.map((b) => b.sourcePattern ?? '')],
      )
    }
    const { rows } = await tx.query<RoleBinding>(
      `SELECT role, source_pattern AS "sourcePattern" FROM role_bindings WHERE user_id = $1::bigint ORDER BY id`,
      [id],
    )
    return { id, email: identity.email, disabled, bindings: rows, created }
  })
}
