import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { notFound } from '@/lib/server/platform/errors/app-error'
import type { UserDto } from '@/lib/shared/schemas/user'
import { toUserDto, USER_COLUMNS, type UserRow } from './to-user-dto'

export async function getUser(sql: Sql, id: string): Promise<UserDto> {
  const { rows } = await sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1::bigint`, [id])
  if (!rows[0]) throw notFound(`user ${id}`)
  return toUserDto(rows[0])
}
