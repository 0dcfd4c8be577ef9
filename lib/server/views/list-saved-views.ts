import 'server-only'
import type { SignedIn } from '@/lib/server/auth/principal'
import type { Db } from '@/lib/server/platform/db'
import { MAX_SAVED_VIEWS, type SavedViewListDto } from '@/lib/shared/schemas/saved-view'
import { listViewsOf } from './views-store'

/** The caller's own saved views, by name. A caller without a user of its own (a provisioning token) has none. */
export async function listSavedViews({ db, principal }: { db: Db; principal: SignedIn }): Promise<SavedViewListDto> {
  if (principal.userId === null) return { views: [] }
  return { views: await listViewsOf({ prisma: db.prisma, userId: principal.userId, limit: MAX_SAVED_VIEWS }) }
}
