import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { readCookie, sessionCookieName } from './cookies'
import { isSignedIn, type Principal } from './principal'
import { revokeSession } from './sessions'

/** Revokes the session behind this request's cookie (server-side: a copied cookie is dead too). */
export async function signOut({ db, config, request, principal }: { db: Db; config: Config; request: Request; principal: Principal }): Promise<void> {
  const secret = readCookie(request, sessionCookieName(config))
  if (!secret) return
  await db.sql.transaction(async (tx) => {
    await revokeSession({ sql: tx, secret })
    if (isSignedIn(principal) && principal.via === 'session') {
      await recordAudit({ sql: tx, actor: principal.actor, action: 'auth.signed-out', subject: { type: 'user', id: principal.userId }, summary: `${principal.actor} signed out` })
    }
  })
}
