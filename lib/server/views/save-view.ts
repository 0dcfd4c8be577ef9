import 'server-only'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { crudTransaction } from '@/lib/server/platform/db/crud-transaction'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { MAX_SAVED_VIEWS, type SavedViewDto, type saveViewSchema } from '@/lib/shared/schemas/saved-view'
import type { z } from 'zod'
import { countViewsOf, hasViewNamed, upsertView } from './views-store'

export type SaveViewOptions = { db: Db; principal: SignedIn; input: z.output<typeof saveViewSchema> }

/**
 * Saves a view for the caller: a new name adds one (up to MAX_SAVED_VIEWS), a name they already use gets the new
 * query. Personal, so not audited: a view selects nothing a link could not.
 */
export async function saveView({ db, principal, input }: SaveViewOptions): Promise<SavedViewDto> {
  const userId = principal.userId
  if (userId === null) throw new AppError('unprocessable', 'Saved views belong to a user; this token has none')
  return crudTransaction(db, async ({ prisma }) => {
    if (!(await hasViewNamed({ prisma, userId, name: input.name })) && (await countViewsOf({ prisma, userId })) >= MAX_SAVED_VIEWS) throw new AppError('conflict', `At most ${MAX_SAVED_VIEWS} saved views; delete one first`)
    return upsertView({ prisma, userId, name: input.name, query: input.query })
  })
}
