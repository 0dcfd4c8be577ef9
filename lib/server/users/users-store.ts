import 'server-only'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { Sql } from '@/lib/server/platform/db/sql'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { RoleBinding } from '@/lib/shared/roles'
import { toUserDto, USER_WITH_ROLES, type UserDto } from './to-user-dto'

/**
 * The users and role bindings an admin manages, through Prisma (plain CRUD: docs/ARCHITECTURE.md#how-code-gets-the-database).
 * `prisma` is the client or a CRUD transaction's (lib/server/platform/db/crud-transaction.ts). The sign-in paths write
 * users too, in SQL under their own locks: the first admin and passwords (lib/server/auth/auth-store.ts), single
 * sign-on and proxy users (lib/server/auth/external-users.ts).
 */
type UsersPrisma = { prisma: Prisma.TransactionClient }

export async function findUser({ prisma, id }: UsersPrisma & { id: string }): Promise<UserDto> {
  const user = await prisma.user.findUnique({ where: { id: BigInt(id) }, ...USER_WITH_ROLES })
  if (!user) throw notFound(`user ${id}`)
  return toUserDto(user)
}

/** Every user (up to `limit`): enabled before disabled, admins first, then by e-mail address in any letter case. */
export async function listUsersInOrder({ prisma, limit }: UsersPrisma & { limit: number }): Promise<UserDto[]> {
  const users = (await prisma.user.findMany(USER_WITH_ROLES)).map(toUserDto)
  const rank = (u: UserDto) => [u.disabled ? 1 : 0, u.roles.some((r) => r.role === 'admin') ? 0 : 1, u.email.toLowerCase()] as const
  return users
    .map((user) => ({ user, key: rank(user) }))
    .sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || (a.key[2] < b.key[2] ? -1 : a.key[2] > b.key[2] ? 1 : 0))
    .slice(0, limit)
    .map((u) => u.user)
}

/**
 * Whether an account has this e-mail address in any letter case (the unique index is over lower(email)). SQL: Prisma's
 * case-insensitive match is ILIKE, which would read `_` and `%` in an address as wildcards.
 */
export async function emailTaken({ sql, email }: { sql: Sql; email: string }): Promise<boolean> {
  const { rows } = await sql.query('SELECT 1 FROM users WHERE lower(email) = lower($1)', [email])
  return rows.length > 0
}

export async function insertLocalUser({ prisma, email, displayName }: UsersPrisma & { email: string; displayName: string | null }): Promise<string> {
  const { id } = await prisma.user.create({ data: { email, displayName, authSource: 'local' }, select: { id: true } })
  return id.toString()
}

/** Locks the user's row until the transaction ends, so concurrent changes (the last-admin check) see each other. */
export async function lockUser({ sql, id }: { sql: Sql; id: string }): Promise<void> {
  await sql.query('SELECT id FROM users WHERE id = $1::bigint FOR UPDATE', [id])
}

export async function updateUserColumns({ prisma, id, displayName, disabled }: UsersPrisma & { id: string; displayName?: string | null; disabled?: boolean }): Promise<void> {
  const userId = BigInt(id)
  let disabledAt: Date | null | undefined
  if (disabled === false) disabledAt = null
  // Disabling keeps the first time it was disabled.
  else if (disabled === true) disabledAt = (await prisma.user.findUnique({ where: { id: userId }, select: { disabledAt: true } }))?.disabledAt ?? new Date()
  await prisma.user.updateMany({ where: { id: userId }, data: { displayName, disabledAt, updatedAt: new Date() } })
}

/** Ends every open session of the user (a disabled user is signed out at once). */
export async function revokeUserSessions({ prisma, userId }: UsersPrisma & { userId: string }): Promise<void> {
  await prisma.session.updateMany({ where: { userId: BigInt(userId), revokedAt: null }, data: { revokedAt: new Date() } })
}

export function countEnabledAdmins({ prisma }: UsersPrisma): Promise<number> {
  return prisma.user.count({ where: { disabledAt: null, roleBindings: { some: { role: 'admin' } } } })
}

/** Replaces a user's bindings set by hand; bindings from identity-provider groups stay as they are. */
export async function replaceManualBindings({ prisma, userId, bindings }: UsersPrisma & { userId: string; bindings: readonly RoleBinding[] }): Promise<void> {
  const id = BigInt(userId)
  await prisma.roleBinding.deleteMany({ where: { userId: id, origin: 'manual' } })
  if (bindings.length === 0) return
  await prisma.roleBinding.createMany({
    data: bindings.map((b) => ({ userId: id, role: b.role, sourcePattern: b.sourcePattern || null, origin: 'manual' })),
    // The unique index is over (user_id, role, coalesce(source_pattern, '')): a binding given twice is kept once.
    skipDuplicates: true,
  })
}
