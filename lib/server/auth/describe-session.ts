import 'server-only'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { SessionDto } from '@/lib/shared/schemas/user'
import { anyUser } from './auth-store'
import { oidcEnabled } from './oidc'
import { isSignedIn, type Principal } from './principal'

export async function describeSession({ db, config, principal }: { db: Db; config: Config; principal: Principal }): Promise<SessionDto> {
  const methods: SessionDto['methods'] = {
    local: config.LAZARUS_LOCAL_ACCOUNTS,
    oidc: oidcEnabled(config) ? { name: config.LAZARUS_OIDC_NAME } : null,
    proxy: config.LAZARUS_TRUSTED_PROXIES.length > 0,
  }
  if (isSignedIn(principal)) {
    return {
      signedIn: true,
      user: { id: principal.userId, email: principal.email, actor: principal.actor, via: principal.via },
      roles: principal.bindings.map((b) => ({ role: b.role, sourcePattern: b.sourcePattern })),
      methods,
      needsSetup: false,
    }
  }
  return { signedIn: false, user: null, roles: [], methods, needsSetup: config.LAZARUS_LOCAL_ACCOUNTS && !(await anyUser({ sql: db.sql })) }
}
