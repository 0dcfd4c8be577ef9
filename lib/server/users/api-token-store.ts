import 'server-only'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { TokenGrant } from '@/lib/server/auth/api-tokens'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { RoleBinding } from '@/lib/shared/roles'
import type { ApiTokenDto } from '@/lib/shared/schemas/user'

/**
 * API tokens as their owners and admins manage them, through Prisma (plain CRUD). Checking a token on every request is
 * hand-written SQL in lib/server/auth/api-tokens.ts: it runs once per request and is benchmarked.
 * `prisma` is the client or a CRUD transaction's (lib/server/platform/db/crud-transaction.ts).
 */
type TokensPrisma = { prisma: Prisma.TransactionClient }

const TOKEN_WITH_OWNER = { include: { user: { select: { email: true } } } } satisfies Prisma.ApiTokenDefaultArgs

type TokenWithOwner = Prisma.ApiTokenGetPayload<typeof TOKEN_WITH_OWNER>

function toApiTokenDto(t: TokenWithOwner): ApiTokenDto {
  return {
    id: t.id.toString(),
    name: t.name,
    owner: { id: t.userId.toString(), email: t.user.email },
    role: t.role as ApiTokenDto['role'],
    sourcePattern: t.sourcePattern,
    scope: t.scope as ApiTokenDto['scope'],
    guardQueue: t.guardQueue ? { vhost: t.guardVhost ?? '/', queue: t.guardQueue } : null,
    expiresAt: t.expiresAt?.toISOString() ?? null,
    lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
    revokedAt: t.revokedAt?.toISOString() ?? null,
    createdAt: t.createdAt.toISOString(),
  }
}

export async function findApiToken({ prisma, id }: TokensPrisma & { id: string }): Promise<ApiTokenDto> {
  const token = await prisma.apiToken.findUnique({ where: { id: BigInt(id) }, ...TOKEN_WITH_OWNER })
  if (!token) throw notFound(`token ${id}`)
  return toApiTokenDto(token)
}

/** Tokens in use first, each part newest first: `ownerId` one user's, null everyone's. */
export async function listApiTokensOf({ prisma, ownerId, limit }: TokensPrisma & { ownerId: string | null; limit: number }): Promise<ApiTokenDto[]> {
  const owner = ownerId === null ? {} : { userId: BigInt(ownerId) }
  const newestFirst = { orderBy: { createdAt: 'desc' }, ...TOKEN_WITH_OWNER } as const
  const active = await prisma.apiToken.findMany({ where: { ...owner, revokedAt: null }, take: limit, ...newestFirst })
  const revoked = active.length < limit ? await prisma.apiToken.findMany({ where: { ...owner, revokedAt: { not: null } }, take: limit - active.length, ...newestFirst }) : []
  return [...active, ...revoked].map(toApiTokenDto)
}

/** The owner a new token would belong to, with the bindings its grant is checked against; null when there is none. */
export async function findTokenOwner({ prisma, userId }: TokensPrisma & { userId: string }): Promise<{ email: string; disabled: boolean; bindings: RoleBinding[] } | null> {
  const user = await prisma.user.findUnique({
    where: { id: BigInt(userId) },
    select: { email: true, disabledAt: true, roleBindings: { select: { role: true, sourcePattern: true } } },
  })
  return user && { email: user.email, disabled: user.disabledAt !== null, bindings: user.roleBindings as RoleBinding[] }
}

export type NewApiToken = {
  name: string
  tokenHash: Buffer
  userId: string
  grant: TokenGrant
  guardVhost: string | null
  /** Days until it expires; null: never. */
  days: number | null
}

export async function insertApiToken({ prisma, token }: TokensPrisma & { token: NewApiToken }): Promise<string> {
  const { id } = await prisma.apiToken.create({
    data: {
      name: token.name,
      tokenHash: new Uint8Array(token.tokenHash),
      userId: BigInt(token.userId),
      role: token.grant.role,
      sourcePattern: token.grant.sourcePattern,
      scope: token.grant.scope,
      guardVhost: token.guardVhost,
      guardQueue: token.grant.guardQueue,
      expiresAt: token.days === null ? null : new Date(Date.now() + token.days * 86_400_000),
    },
    select: { id: true },
  })
  return id.toString()
}

export async function markApiTokenRevoked({ prisma, id }: TokensPrisma & { id: string }): Promise<void> {
  await prisma.apiToken.updateMany({ where: { id: BigInt(id), revokedAt: null }, data: { revokedAt: new Date() } })
}
