import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import { createOneTimeLink } from '@/lib/server/auth/one-time-links'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { CreatedUserDto, CreateUserInput } from '@/lib/shared/schemas/user'
import { emailTaken, findUser, insertLocalUser, replaceManualBindings } from './users-store'

export type CreateUserOptions = { db: Db; actor: string; input: CreateUserInput; baseUrl: string }

/** Invited users set their own password through this link within a week; an admin never learns it. */
const INVITE_VALID_HOURS = 7 * 24

/**
 * Adds a local account with the given roles and returns a one-time link for its owner to set a password with (shown
 * to the admin once, to pass on). Users of single sign-on or a proxy need no account: they appear at first sign-in.
 */
export async function createUser({ db, actor, input, baseUrl }: CreateUserOptions): Promise<CreatedUserDto> {
  return crudTransaction(db, async ({ prisma, sql }) => {
    if (await emailTaken({ sql, email: input.email })) throw new AppError('conflict', `A user with the e-mail address ${input.email} exists`)
    const id = await insertLocalUser({ prisma, email: input.email, displayName: input.displayName ?? null })
    await replaceManualBindings({ prisma, userId: id, bindings: input.roles })
    const secret = await createOneTimeLink({ sql, purpose: 'set-password', userId: id, validHours: INVITE_VALID_HOURS })
    const user = await findUser({ prisma, id })
    await recordAudit({
      sql,
      actor,
      action: 'user.created',
      subject: { type: 'user', id },
      summary: `Invited ${input.email}${input.roles.length ? ` as ${input.roles.map(describeBinding).join(', ')}` : ' without a role'}`,
      details: { before: null, after: user },
    })
    return { user, setPasswordUrl: `${baseUrl}/set-password#token=${secret}` }
  })
}

export const describeBinding = (b: { role: string; sourcePattern: string | null }) => (b.sourcePattern ? `${b.role} on ${b.sourcePattern}` : b.role)
