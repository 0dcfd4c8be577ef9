import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { UpdateUserInput, UserDto } from '@/lib/shared/schemas/user'
import { getUser } from './get-user'
import { replaceManualBindings } from './role-bindings'

export type UpdateUserOptions = { db: Db; principal: SignedIn; id: string; input: UpdateUserInput }

/**
 * Changes a user's hand-set roles, name or disabled state. Disabling ends the user's sessions at once (and their API
 * tokens stop working, since a token needs an enabled owner). An admin cannot take away or disable their own admin
 * role (so there is always someone left who can undo a mistake), and the last enabled admin cannot be removed.
 */
export async function updateUser({ db, principal, id, input }: UpdateUserOptions): Promise<UserDto> {
  return db.sql.transaction(async (tx) => {
    await tx.query('SELECT id FROM users WHERE id = $1::bigint FOR UPDATE', [id])
    const before = await getUser(tx, id)
    const self = principal.userId === id
    if (self && input.disabled) throw new AppError('unprocessable', 'You cannot disable your own account')
    if (input.roles) await replaceManualBindings(tx, id, input.roles)
    if (input.displayName !== undefined) await tx.query('UPDATE users SET display_name = $2 WHERE id = $1::bigint', [id, input.displayName])
    if (input.disabled !== undefined) {
      await tx.query('UPDATE users SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) ELSE NULL END WHERE id = $1::bigint', [id, input.disabled])
      if (input.disabled) await tx.query('UPDATE sessions SET revoked_at = now() WHERE user_id = $1::bigint AND revoked_at IS NULL', [id])
    }
    await tx.query('UPDATE users SET updated_at = now() WHERE id = $1::bigint', [id])
    const after = await getUser(tx, id)
    const wasAdmin = before.roles.some((r) => r.role === 'admin')
    const isAdmin = !after.disabled && after.roles.some((r) => r.role === 'admin')
    if (wasAdmin && !isAdmin) {
      if (self) throw new AppError('unprocessable', 'You cannot remove your own admin role; ask another admin')
      const { rows } = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM users u WHERE u.disabled_at IS NULL AND EXISTS (SELECT 1 FROM role_bindings b WHERE b.user_id = u.id AND b.role = 'admin')`,
      )
      if (rows[0].n === 0) throw new AppError('unprocessable', 'This is the last admin; make someone else admin first')
    }
    await recordAudit(tx, {
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
