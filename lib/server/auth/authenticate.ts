import 'server-only'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { RequestFacts } from '@/lib/server/platform/request-facts'
import { addressInRanges } from '@/lib/server/platform/addresses'
import { principalFromAdminToken, principalFromApiToken } from './api-tokens'
import { readCookie, sessionCookieName } from './cookies'
import { upsertExternalUser } from './external-users'
import { bindingsForGroups } from '@/lib/shared/group-roles'
import { ANONYMOUS, signedIn, type Principal } from './principal'
import { secretHash } from './secret-token'
import { principalFromSession } from './sessions'

export type AuthenticateOptions = { db: Db; config: Config }

let adminTokenHash: { source: string; hash: Buffer | null } | undefined

function expectedAdminTokenHash(config: Config): Buffer | null {
  const source = `${config.LAZARUS_ADMIN_TOKEN ?? ''}|${config.LAZARUS_ADMIN_TOKEN_SHA256 ?? ''}`
  if (adminTokenHash?.source !== source) {
    const hash = config.LAZARUS_ADMIN_TOKEN
      ? secretHash(config.LAZARUS_ADMIN_TOKEN)
      : config.LAZARUS_ADMIN_TOKEN_SHA256
        ? Buffer.from(config.LAZARUS_ADMIN_TOKEN_SHA256, 'hex')
        : null
    adminTokenHash = { source, hash }
  }
  return adminTokenHash.hash
}

/** Proxy users are written to the database at most this often (a proxy sends the headers on every request). */
const PROXY_REFRESH_MS = 60_000
const proxyCache = new Map<string, { at: number; principal: Principal | null }>()

async function principalFromProxy(request: Request, { db, config }: AuthenticateOptions): Promise<Principal | null> {
  const email = request.headers.get(config.LAZARUS_PROXY_USER_HEADER)?.trim()
  if (!email) return null
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new AppError('unauthenticated', 'The proxy sent a user that is not an e-mail address')
  const groups = (request.headers.get(config.LAZARUS_PROXY_GROUPS_HEADER) ?? '').split(',').map((g) => g.trim()).filter(Boolean)
  const key = `${email.toLowerCase()}\u0000${groups.join('\u0000')}`
  const cached = proxyCache.get(key)
  if (cached && Date.now() - cached.at < PROXY_REFRESH_MS) return cached.principal
  const user = await upsertExternalUser({
    sql: db.sql,
    identity: { email, displayName: null, source: 'proxy', groupBindings: bindingsForGroups(groups, config.LAZARUS_GROUP_ROLES) },
  })
  const principal: Principal | null = user.disabled
    ? null
    : signedIn({ kind: 'user', via: 'proxy', userId: user.id, email, actor: email, bindings: user.bindings })
  if (proxyCache.size > 10_000) proxyCache.clear()
  proxyCache.set(key, { at: Date.now(), principal })
  return principal
}

/**
 * Who sent this request: a bearer token (API token or LAZARUS_ADMIN_TOKEN), a user a trusted authenticating proxy
 * vouches for, or a session cookie; else anonymous. A bearer token that is not valid is refused outright rather than
 * falling back to the cookie, so a script with a revoked token learns it at once.
 */
export async function authenticate(request: Request, facts: RequestFacts, options: AuthenticateOptions): Promise<Principal> {
  if (!facts.hostOk) return ANONYMOUS
  const authorization = request.headers.get('authorization')
  if (authorization) {
    const match = /^Bearer\s+(\S{16,1024})\s*$/i.exec(authorization)
    if (!match) throw new AppError('unauthenticated', 'Authorization must be "Bearer <token>"')
    const secret = match[1]
    const principal =
      principalFromAdminToken(secret, expectedAdminTokenHash(options.config)) ?? (await principalFromApiToken({ sql: options.db.sql, secret }))
    if (!principal) throw new AppError('unauthenticated', 'The token is not valid (unknown, revoked, expired, or its owner lost the role)')
    return principal
  }
  if (facts.viaFront && facts.trustedProxy && addressInRanges(facts.peer, options.config.LAZARUS_TRUSTED_PROXIES)) {
    const principal = await principalFromProxy(request, options)
    if (principal) return principal
  }
  const secret = readCookie(request, sessionCookieName(options.config))
  if (secret && secret.length <= 256) {
    const principal = await principalFromSession({
      sql: options.db.sql,
      secret,
      limits: { idleMinutes: options.config.LAZARUS_SESSION_IDLE_MINUTES, maxHours: options.config.LAZARUS_SESSION_MAX_HOURS },
    })
    if (principal) return principal
  }
  return ANONYMOUS
}
