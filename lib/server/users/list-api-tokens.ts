import 'server-only'
import { hasPermission, type SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import type { ApiTokenListDto } from '@/lib/shared/schemas/user'
import { listApiTokensOf } from './api-token-store'

/** The caller's own tokens; an admin sees everyone's. Never the secret: it was shown once, at creation. */
export async function listApiTokens({ db, principal }: { db: Db; principal: SignedIn }): Promise<ApiTokenListDto> {
  const all = hasPermission(principal, 'admin')
  // A caller without a user of its own (a provisioning token) owns no tokens.
  if (!all && principal.userId === null) return { tokens: [] }
  return { tokens: await listApiTokensOf({ prisma: db.prisma, ownerId: all ? null : principal.userId, limit: 2000 }) }
}
