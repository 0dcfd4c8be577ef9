import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { hasPermission, type SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { ApiTokenDto } from '@/lib/shared/schemas/user'
import { findApiToken, markApiTokenRevoked } from './api-token-store'

/** Revokes a token at once (every process checks the table on every request). Owners revoke their own; admins any. */
export async function revokeApiToken({ db, principal, id }: { db: Db; principal: SignedIn; id: string }): Promise<ApiTokenDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    const before = await findApiToken({ prisma, id })
    if (before.owner.id !== principal.userId && !hasPermission(principal, 'admin')) throw notFound(`token ${id}`)
    if (before.revokedAt) return before
    await markApiTokenRevoked({ prisma, id })
    const after = await findApiToken({ prisma, id })
    await recordAudit({
      sql,
      actor: principal.actor,
      action: 'token.revoked',
      subject: { type: 'token', id },
      summary: `Revoked token "${before.name}" of ${before.owner.email}`,
      details: { before, after },
    })
    return after
  })
}
