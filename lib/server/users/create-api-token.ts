import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { API_TOKEN_PREFIX, ownerMayHold, type TokenGrant } from '@/lib/server/auth/api-tokens'
import { hasPermission, type SignedIn } from '@/lib/server/auth/principal'
import { newSecret, secretHash } from '@/lib/server/auth/secret-token'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { CreatedApiTokenDto, CreateTokenInput } from '@/lib/shared/schemas/user'
import { findApiToken, findTokenOwner, insertApiToken } from './api-token-store'

export type CreateApiTokenOptions = { db: Db; principal: SignedIn; input: CreateTokenInput }

const DEFAULT_DAYS = 90

/**
 * Creates an API token and returns it once (only its SHA-256 is kept). It belongs to the caller, or, for an admin,
 * to the user named; it may grant no more than its owner holds, now and at every use. Tokens themselves cannot
 * create tokens: that needs a person (or the provisioning token, for someone else).
 */
export async function createApiToken({ db, principal, input }: CreateApiTokenOptions): Promise<CreatedApiTokenDto> {
  if (principal.kind === 'token' && principal.tokenId !== null) throw new AppError('forbidden', 'API tokens cannot create tokens; sign in')
  const forOther = input.userId !== undefined && input.userId !== principal.userId
  if (forOther && !hasPermission(principal, 'admin')) throw new AppError('forbidden', 'Only admins create tokens for other users')
  const ownerId = input.userId ?? principal.userId
  if (!ownerId) throw new AppError('invalid', 'Name the user who owns the token (userId)')
  if (input.expiresInDays === null && !hasPermission(principal, 'admin')) throw new AppError('forbidden', 'Only admins create tokens that never expire')
  const grant: TokenGrant = {
    role: input.role ?? null,
    sourcePattern: input.sourcePattern ?? null,
    scope: input.scope ?? null,
    guardQueue: input.guardQueue ?? null,
  }
  if (grant.scope === 'metrics' || grant.scope === 'guard') grant.sourcePattern = null
  return crudTransaction(db, async ({ prisma, sql }) => {
    const owner = await findTokenOwner({ prisma, userId: ownerId })
    if (!owner || owner.disabled) throw new AppError('not_found', `user ${ownerId} not found or disabled`)
    if (!ownerMayHold(owner.bindings, grant)) {
      throw new AppError('forbidden', `${owner.email} does not hold ${describeGrant(grant)}, so a token cannot either`)
    }
    const secret = newSecret(API_TOKEN_PREFIX)
    const days = input.expiresInDays === undefined ? DEFAULT_DAYS : input.expiresInDays
    const id = await insertApiToken({
      prisma,
      token: { name: input.name, tokenHash: secretHash(secret), userId: ownerId, grant, guardVhost: grant.scope === 'guard' ? (input.guardVhost ?? null) : null, days },
    })
    const apiToken = await findApiToken({ prisma, id })
    await recordAudit({
      sql,
      actor: principal.actor,
      action: 'token.created',
      subject: { type: 'token', id: apiToken.id },
      summary: `Created token "${input.name}" for ${owner.email}: ${describeGrant(grant)}${days === null ? ', never expires' : `, expires in ${days} days`}`,
      details: { before: null, after: apiToken },
    })
    return { token: secret, apiToken }
  })
}

export function describeGrant(grant: TokenGrant): string {
  if (grant.scope === 'metrics') return 'the metrics scope'
  if (grant.scope === 'guard') return `the guard scope for queue ${grant.guardQueue}`
  return grant.sourcePattern ? `${grant.role} on ${grant.sourcePattern}` : `${grant.role}`
}
