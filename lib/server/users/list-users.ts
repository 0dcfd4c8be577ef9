import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { UserListDto } from '@/lib/shared/schemas/user'
import { listUsersInOrder } from './users-store'

/** Every user, admins first, then by e-mail address. Teams have tens to hundreds: no paging. */
export async function listUsers({ db }: { db: Db }): Promise<UserListDto> {
  return { users: await listUsersInOrder({ prisma: db.prisma, limit: 5000 }) }
}
