import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { RoleBinding } from '@/lib/shared/roles'

/** Replaces a user's bindings set by hand; bindings from identity-provider groups stay as they are. */
export async function replaceManualBindings(tx: Sql, userId: string, bindings: readonly RoleBinding[]): Promise<void> {
  await tx.query(`DELETE FROM role_bindings WHERE user_id = $1::bigint AND origin = 'manual'`, [userId])
  if (bindings.length === 0) return
  await tx.query(
    `INSERT INTO role_bindings (user_id, role, source_pattern, origin)
     SELECT $1::bigint, r, nullif(p, ''), 'manual' FROM unnest($2::text[], $3::text[]) AS x(r, p)
     ON CONFLICT DO NOTHING`,
    [userId, bindings.map((b) => b.role), bindings.map((b) => b.sourcePattern ?? '')],
  )
}
