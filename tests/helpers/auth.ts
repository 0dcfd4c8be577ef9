/**
 * Credentials for tests that call route handlers. Most tests act as the provisioning admin token
 * (LAZARUS_ADMIN_TOKEN, set for every test process by tests/setup-env.ts); tests about who did what create real users
 * with API tokens, as a script would.
 */
import type { Db } from '@/lib/server/platform/db'
import type { SignedIn } from '@/lib/server/auth/principal'
import { createApiToken } from '@/lib/server/users/create-api-token'
import { createUser } from '@/lib/server/users/create-user'
import type { Role } from '@/lib/shared/roles'

export const TEST_ADMIN_TOKEN = 'lazarus-test-admin-token-0123456789abcdefghij'

export const ADMIN_AUTH = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } as const

/** The principal LAZARUS_ADMIN_TOKEN stands for. */
export const PROVISIONING_ADMIN: SignedIn = {
  kind: 'token',
  via: 'bearer',
  userId: null,
  email: null,
  actor: 'LAZARUS_ADMIN_TOKEN',
  bindings: [{ role: 'admin', sourcePattern: null }],
  scope: null,
  guardQueue: null,
  sessionId: null,
  tokenId: null,
}

/** A copy of `request` carrying `authorization` (the admin token unless given), unless it already has credentials. */
export function withAuth(request: Request, authorization = ADMIN_AUTH.authorization): Request {
  if (request.headers.has('authorization') || request.headers.has('cookie')) return request
  const headers = new Headers(request.headers)
  headers.set('authorization', authorization)
  return new Request(request, { headers })
}

/** The audit name of a test user's API token. */
export const tokenActor = (name: string) => `${name}@lazarus.test (token "tests")`

export type TestUser = { userId: string; email: string; token: string; actor: string; authorization: string }

/** A user `<name>@lazarus.test` with the given roles and an API token acting as `tokenRole` (default: their highest). */
export async function createTestUser(
  db: Db,
  name: string,
  roles: { role: Role; sourcePattern?: string | null }[],
  tokenGrant: { role?: Role; sourcePattern?: string | null; scope?: 'metrics' | 'guard'; guardQueue?: string } = {},
): Promise<TestUser> {
  const { user } = await createUser({
    db,
    actor: 'tests',
    input: { email: `${name}@lazarus.test`, roles: roles.map((r) => ({ role: r.role, sourcePattern: r.sourcePattern ?? null })) },
    baseUrl: 'http://lazarus.test',
  })
  const grant = tokenGrant.scope ? { scope: tokenGrant.scope, guardQueue: tokenGrant.guardQueue } : { role: tokenGrant.role ?? roles[0]?.role ?? 'viewer', sourcePattern: tokenGrant.sourcePattern ?? roles[0]?.sourcePattern ?? null }
  const { token } = await createApiToken({
    db,
    principal: PROVISIONING_ADMIN,
    input: { name: 'tests', guardVhost: '/', userId: user.id, ...grant },
  })
  return { userId: user.id, email: user.email, token, actor: tokenActor(name), authorization: `Bearer ${token}` }
}
