import 'server-only'
import type { RoleBindingDto, UserDto } from '@/lib/shared/schemas/user'

export type UserRow = {
  id: string
  email: string
  display_name: string | null
  auth_source: UserDto['authSource']
  has_password: boolean
  disabled_at: Date | null
  last_sign_in_at: Date | null
  created_at: Date
  roles: RoleBindingDto[]
}

/** Columns for a UserRow, from `users u`. */
export const USER_COLUMNS = `u.id::text, u.email, u.display_name, u.auth_source, u.password_hash IS NOT NULL AS has_password,
  u.disabled_at, u.last_sign_in_at, u.created_at,
  coalesce((SELECT json_agg(json_build_object('role', b.role, 'sourcePattern', b.source_pattern, 'origin', b.origin) ORDER BY b.id)
              FROM role_bindings b WHERE b.user_id = u.id), '[]'::json) AS roles`

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString())

export function toUserDto(row: UserRow): UserDto {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    authSource: row.auth_source,
    roles: row.roles,
    disabled: row.disabled_at !== null,
    invited: row.auth_source === 'local' && !row.has_password,
    lastSignInAt: iso(row.last_sign_in_at),
    createdAt: iso(row.created_at) as string,
  }
}
