import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { hasPermission, type SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { ApiTokenDto } from '@/lib/shared/schemas/user'
import { getApiToken } from './list-api-tokens'

/** Revokes a token at once (every process checks the table on every request). Owners revoke their own; admins any. */
export async function revokeApiToken({ db, principal, id }: { db: Db; principal: SignedIn; id: string }): Promise<ApiTokenDto> {
  return db.sql.transaction(async (tx) => {
    const before = await getApiToken(tx, id)
    if (before.owner.id !== principal.userId && !hasPermission(principal, 'admin')) throw notFound(`token ${id}`)
    if (before.revokedAt) return before
    await tx.query('UPDATE api_tokens SET revoked_at = now() WHERE id = $1::bigint', [id])
    const after = await getApiToken(tx, id)
    await recordAudit(tx, {
      actor: principal.actor,
      action: 'token.revoked',
      subject: { type: 'token', id },
      summary: `Revoked token "${before.name}" of ${before.owner.email}`,
      details: { before, after },
    })
    return after
  })
}
