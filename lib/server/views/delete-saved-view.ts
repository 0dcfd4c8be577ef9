import 'server-only'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { deleteViewOf } from './views-store'

/** Deletes one of the caller's saved views; another user's is not found. */
export async function deleteSavedView({ db, principal, id }: { db: Db; principal: SignedIn; id: string }): Promise<{ deleted: true }> {
  if (principal.userId === null || !(await deleteViewOf({ prisma: db.prisma, userId: principal.userId, id }))) throw notFound(`saved view ${id}`)
  return { deleted: true }
}
