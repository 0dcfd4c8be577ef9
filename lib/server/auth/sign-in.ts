import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { findAccountByEmail, recentFailedAttempts, recordSignInAttempt } from './auth-store'
import { decoyHash, verifyPassword } from './passwords'
import { createSession } from './sessions'

/**
 * Brute-force limits for password sign-in, counted in PostgreSQL so every web process shares them: at most
 * ACCOUNT_FAILURES failed attempts per account and ADDRESS_FAILURES per client address in WINDOW_MINUTES. Past
 * either, sign-in is refused (even with the right password) until the oldest counted failure leaves the window.
 */
export const SIGN_IN_LIMITS = { windowMinutes: 15, accountFailures: 5, addressFailures: 30 } as const

export type SignInResult = { secret: string; expiresAt: Date; userId: string; email: string }

export type SignInWithPasswordOptions = {
  db: Db
  config: Config
  email: string
  password: string
  ip: string
  userAgent: string | null
}

async function retryAfterSeconds({ db, by, value, limit }: { db: Db; by: 'email' | 'ip'; value: string; limit: number }): Promise<number | null> {
  const { n, oldest } = await recentFailedAttempts({ sql: db.sql, by, value, windowMinutes: SIGN_IN_LIMITS.windowMinutes, limit })
  if (n < limit || !oldest) return null
  return Math.max(1, Math.ceil((new Date(oldest).getTime() + SIGN_IN_LIMITS.windowMinutes * 60_000 - Date.now()) / 1000))
}

/**
 * Signs in with an e-mail address and password. Unknown account, wrong password, disabled account and an account
 * without a password all give the same answer after the same work. Every attempt is recorded and audited.
 */
export async function signInWithPassword({ db, config, email, password, ip, userAgent }: SignInWithPasswordOptions): Promise<SignInResult> {
  if (!config.LAZARUS_LOCAL_ACCOUNTS) throw new AppError('forbidden', 'Password sign-in is switched off here; use single sign-on')
  const wait =
    (await retryAfterSeconds({ db, by: 'email', value: email, limit: SIGN_IN_LIMITS.accountFailures })) ??
    (await retryAfterSeconds({ db, by: 'ip', value: ip, limit: SIGN_IN_LIMITS.addressFailures }))
  if (wait !== null) {
    await db.sql.transaction(async (tx) => {
      await recordAudit({ sql: tx, actor: email, action: 'auth.sign-in-failed', subject: { type: 'user', id: null }, summary: `Sign-in refused for ${email}: too many failed attempts`, details: { ip, reason: 'rate-limited' } })
    })
    throw new AppError('rate_limited', `Too many failed sign-ins; try again in ${Math.ceil(wait / 60)} min`, { retryAfterSeconds: wait })
  }
  const user = await findAccountByEmail({ sql: db.sql, email })
  const valid = await verifyPassword(user?.password_hash ?? (await decoyHash()), password)
  const ok = Boolean(user && user.password_hash && valid && !user.disabled)
  await recordSignInAttempt({ sql: db.sql, email, ip, succeeded: ok })
  if (!ok || !user) {
    await db.sql.transaction(async (tx) => {
      await recordAudit({
        sql: tx,
        actor: email,
        action: 'auth.sign-in-failed',
        subject: { type: 'user', id: user?.id ?? null },
        summary: `Failed sign-in for ${email}`,
        details: { ip, reason: !user ? 'unknown account' : user.disabled ? 'disabled' : !user.password_hash ? 'no password set' : 'wrong password' },
      })
    })
    throw new AppError('unauthenticated', 'E-mail address or password is wrong')
  }
  return startSession({ db, config, userId: user.id, email: user.email, method: 'local', ip, userAgent })
}

/** Creates the session of a user who just proved who they are, and audits the sign-in. */
export async function startSession({ db, config, userId, email, method, ip, userAgent }: {
  db: Db
  config: Config
  userId: string
  email: string
  method: 'local' | 'oidc'
  ip: string
  userAgent: string | null
}): Promise<SignInResult> {
  return db.sql.transaction(async (tx) => {
    const session = await createSession({
      sql: tx,
      userId,
      method,
      limits: { idleMinutes: config.LAZARUS_SESSION_IDLE_MINUTES, maxHours: config.LAZARUS_SESSION_MAX_HOURS },
      ip,
      userAgent,
    })
    await recordAudit({ sql: tx, actor: email, action: 'auth.signed-in', subject: { type: 'user', id: userId }, summary: `${email} signed in (${method === 'local' ? 'password' : 'single sign-on'})`, details: { ip, method } })
    return { ...session, userId, email }
  })
}
