import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { UserListDto } from '@/lib/shared/schemas/user'
import { toUserDto, USER_COLUMNS, type UserRow } from './to-user-dto'

/** Every user, admins first, then by e-mail address. Teams have tens to hundreds: no paging. */
export async function listUsers({ db }: { db: Db }): Promise<UserListDto> {
  const { rows } = await db.sql.query<UserRow>(
    `SELECT ${USER_COLUMNS} FROM users u
      ORDER BY u.disabled_at IS NOT NULL, NOT EXISTS (SELECT 1 FROM role_bindings b WHERE b.user_id = u.id AND b.role = 'admin'), lower(u.email)
      LIMIT 5000`,
  )
  return { users: rows.map(toUserDto) }
}
