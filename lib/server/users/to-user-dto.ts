import 'server-only'
import type { Prisma } from '@/lib/generated/prisma/client'
import type { RoleBindingDto, UserDto } from '@/lib/shared/schemas/user'

export type { UserDto }

/** What a UserDto is made of: the user with its bindings in the order they were made. */
export const USER_WITH_ROLES = {
  include: { roleBindings: { select: { role: true, sourcePattern: true, origin: true }, orderBy: { id: 'asc' } } },
} satisfies Prisma.UserDefaultArgs

export type UserWithRoles = Prisma.UserGetPayload<typeof USER_WITH_ROLES>

export function toUserDto(user: UserWithRoles): UserDto {
  return {
    id: user.id.toString(),
    email: user.email,
    displayName: user.displayName,
    authSource: user.authSource as UserDto['authSource'],
    roles: user.roleBindings.map((b) => ({ role: b.role, sourcePattern: b.sourcePattern, origin: b.origin }) as RoleBindingDto),
    disabled: user.disabledAt !== null,
    invited: user.authSource === 'local' && user.passwordHash === null,
    lastSignInAt: user.lastSignInAt?.toISOString() ?? null,
    createdAt: user.createdAt.toISOString(),
  }
}
