import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { UpdateUserInput, UserDto } from '@/lib/shared/schemas/user'
import { countEnabledAdmins, findUser, lockUser, replaceManualBindings, revokeUserSessions, updateUserColumns } from './users-store'

export type UpdateUserOptions = { db: Db; principal: SignedIn; id: string; input: UpdateUserInput }

/**
 * Changes a user's hand-set roles, name or disabled state. Disabling ends the user's sessions at once (and their API
 * tokens stop working, since a token needs an enabled owner). An admin cannot take away or disable their own admin
 * role (so there is always someone left who can undo a mistake), and the last enabled admin cannot be removed.
 */
export async function updateUser({ db, principal, id, input }: UpdateUserOptions): Promise<UserDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    await lockUser({ sql, id })
    const before = await findUser({ prisma, id })
    const self = principal.userId === id
    if (self && input.disabled) throw new AppError('unprocessable', 'You cannot disable your own account')
    if (input.roles) await replaceManualBindings({ prisma, userId: id, bindings: input.roles })
    await updateUserColumns({ prisma, id, displayName: input.displayName, disabled: input.disabled })
    if (input.disabled) await revokeUserSessions({ prisma, userId: id })
    const after = await findUser({ prisma, id })
    const wasAdmin = before.roles.some((r) => r.role === 'admin')
    const isAdmin = !after.disabled && after.roles.some((r) => r.role === 'admin')
    if (wasAdmin && !isAdmin) {
      if (self) throw new AppError('unprocessable', 'You cannot remove your own admin role; ask another admin')
      if ((await countEnabledAdmins({ prisma })) === 0) throw new AppError('unprocessable', 'This is the last admin; make someone else admin first')
    }
    await recordAudit({
      sql,
      actor: principal.actor,
      action: 'user.updated',
      subject: { type: 'user', id },
      summary: `Changed ${after.email}: ${changes(before, after).join('; ') || 'nothing'}`,
      details: { before, after },
    })
    return after
  })
}

function changes(before: UserDto, after: UserDto): string[] {
  const out: string[] = []
  const roles = (u: UserDto) => u.roles.map((r) => (r.sourcePattern ? `${r.role} on ${r.sourcePattern}` : r.role)).join(', ') || 'none'
  if (roles(before) !== roles(after)) out.push(`roles ${roles(before)} → ${roles(after)}`)
  if (before.disabled !== after.disabled) out.push(after.disabled ? 'disabled' : 'enabled')
  if (before.displayName !== after.displayName) out.push('name changed')
  return out
}
