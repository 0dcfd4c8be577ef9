import { z } from 'zod'
import { ROLES, SOURCE_PATTERN_RE, type Role } from '@/lib/shared/roles'
import { idSchema as id, text } from './fields'

const email = z.string().trim().toLowerCase().email('must be an e-mail address').max(320)
// Argon2 hashes whatever it gets; the cap keeps a request from making it hash megabytes.
const password = z.string().min(12, 'must be at least 12 characters').max(1024)

export const roleBindingSchema = z
  .object({
    role: z.enum(ROLES),
    /** Limits the role to sources whose queue matches (`billing.*`); null: every source. */
    sourcePattern: z.string().regex(SOURCE_PATTERN_RE, 'must be a queue name pattern such as billing.*').nullable().default(null),
  })
  .strict()
  .refine((b) => !(b.role === 'admin' && b.sourcePattern !== null), { message: 'admin cannot be limited to some sources', path: ['sourcePattern'] })

// POST /api/auth/sign-in
export const signInSchema = z.object({ email, password: z.string().min(1).max(1024) }).strict()

// POST /api/auth/setup – the first admin, with the one-time link printed at start-up
export const setupSchema = z.object({ token: z.string().min(16).max(256), email, password, displayName: text().trim().max(200).optional() }).strict()

// POST /api/auth/set-password – an invited user's one-time link
export const setPasswordSchema = z.object({ token: z.string().min(16).max(256), password }).strict()

// POST /api/users
export const createUserSchema = z
  .object({
    email,
    displayName: text().trim().max(200).optional(),
    roles: z.array(roleBindingSchema).max(50).default([]),
  })
  .strict()
export type CreateUserInput = z.infer<typeof createUserSchema>

// PATCH /api/users/{id}
export const updateUserSchema = z
  .object({
    displayName: text().trim().max(200).nullable().optional(),
    /** Replaces the bindings an admin set by hand (group-derived ones follow the identity provider). */
    roles: z.array(roleBindingSchema).max(50).optional(),
    disabled: z.boolean().optional(),
  })
  .strict()
export type UpdateUserInput = z.infer<typeof updateUserSchema>

// POST /api/tokens
export const createTokenSchema = z
  .object({
    name: text().trim().min(1).max(100),
    /** A token acting with a role (at most its owner's), or limited to one purpose. */
    role: z.enum(ROLES).optional(),
    sourcePattern: z.string().regex(SOURCE_PATTERN_RE).nullable().optional(),
    scope: z.enum(['metrics', 'guard']).optional(),
    /** The queue a guard token reads the pauses of. */
    guardQueue: text().min(1).max(255).optional(),
    guardVhost: text().min(1).max(255).default('/'),
    /** Days until it stops working; omitted: 90. null: never (admins only). */
    expiresInDays: z.number().int().min(1).max(3650).nullable().optional(),
    /** Admins may create a token owned by another user (provisioning). */
    userId: id.optional(),
  })
  .strict()
  .refine((t) => (t.role === undefined) !== (t.scope === undefined), { message: 'give either a role or a scope', path: ['role'] })
  .refine((t) => (t.scope === 'guard') === (t.guardQueue !== undefined), { message: 'a guard token needs guardQueue (and only a guard token)', path: ['guardQueue'] })
export type CreateTokenInput = z.infer<typeof createTokenSchema>

export type RoleBindingDto = { role: Role; sourcePattern: string | null; origin: 'manual' | 'group' }

export type UserDto = {
  id: string
  email: string
  displayName: string | null
  authSource: 'local' | 'oidc' | 'proxy'
  roles: RoleBindingDto[]
  disabled: boolean
  /** A local account whose owner has not set a password yet. */
  invited: boolean
  lastSignInAt: string | null
  createdAt: string
}

export type ApiTokenDto = {
  id: string
  name: string
  owner: { id: string; email: string }
  role: Role | null
  sourcePattern: string | null
  scope: 'metrics' | 'guard' | null
  guardQueue: { vhost: string; queue: string } | null
  expiresAt: string | null
  lastUsedAt: string | null
  revokedAt: string | null
  createdAt: string
}

/** GET /api/users */
export type UserListDto = { users: UserDto[] }
/** POST /api/users: the account and the one-time link its owner sets a password with. */
export type CreatedUserDto = { user: UserDto; setPasswordUrl: string }

/** GET /api/tokens */
export type ApiTokenListDto = { tokens: ApiTokenDto[] }
/** POST /api/tokens: the secret, shown this once, and the token's record. */
export type CreatedApiTokenDto = { token: string; apiToken: ApiTokenDto }

/** GET /api/auth/session: who is signed in, and what the browser should offer them. */
export type SessionDto = {
  signedIn: boolean
  user: { id: string | null; email: string | null; actor: string; via: 'session' | 'bearer' | 'proxy' } | null
  roles: { role: Role; sourcePattern: string | null }[]
  /** The sign-in methods this Lazarus offers (for the sign-in page). */
  methods: { local: boolean; oidc: { name: string } | null; proxy: boolean }
  /** No user exists yet: the console printed a one-time setup link. */
  needsSetup: boolean
}
