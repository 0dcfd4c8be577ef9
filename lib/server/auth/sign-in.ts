import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
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

async function retryAfterSeconds(db: Db, column: 'email' | 'ip', value: string, limit: number): Promise<number | null> {
  const where = column === 'email' ? 'lower(email) = lower($1)' : 'ip = $1'
  const { rows } = await db.sql.query<{ n: number; oldest: Date | null }>(
    `SELECT count(*)::int AS n, min(at) AS oldest FROM (
       SELECT at FROM sign_in_attempts WHERE ${where} AND NOT succeeded AND at > now() - $2::int * interval '1 minute'
       ORDER BY at DESC LIMIT $3) recent`,
    [value, SIGN_IN_LIMITS.windowMinutes, limit],
  )
  const { n, oldest } = rows[0]
  if (n < limit || !oldest) return null
  return Math.max(1, Math.ceil((new Date(oldest).getTime() + SIGN_IN_LIMITS.windowMinutes * 60_000 - Date.now()) / 1000))
}

/**
 * Signs in with an e-mail address and password. Unknown account, wrong password, disabled account and an account
 * without a password all give the same answer after the same work. Every attempt is recorded and audited.
 */
export async function signInWithPassword({ db, config, email, password, ip, userAgent }: SignInWithPasswordOptions): Promise<SignInResult> {
  if (!config.LAZARUS_LOCAL_ACCOUNTS) throw new AppError('forbidden', 'Password sign-in is switched off here; use single sign-on')
  const wait = (await retryAfterSeconds(db, 'email', email, SIGN_IN_LIMITS.accountFailures)) ?? (await retryAfterSeconds(db, 'ip', ip, SIGN_IN_LIMITS.addressFailures))
  if (wait !== null) {
    await db.sql.transaction(async (tx) => {
      await recordAudit(tx, { actor: email, action: 'auth.sign-in-failed', subject: { type: 'user', id: null }, summary: `Sign-in refused for ${email}: too many failed attempts`, details: { ip, reason: 'rate-limited' } })
    })
    throw new AppError('rate_limited', `Too many failed sign-ins; try again in ${Math.ceil(wait / 60)} min`, { retryAfterSeconds: wait })
  }
  const { rows } = await db.sql.query<{ id: string; email: string; password_hash: string | null; disabled: boolean }>(
    `SELECT id::text, email, password_hash, disabled_at IS NOT NULL AS disabled FROM users WHERE lower(email) = lower($1)`,
    [email],
  )
  const user = rows[0]
  const valid = await verifyPassword(user?.password_hash ?? (await decoyHash()), password)
  const ok = Boolean(user && user.password_hash && valid && !user.disabled)
  await db.sql.query('INSERT INTO sign_in_attempts (email, ip, succeeded) VALUES ($1, $2, $3)', [email, ip, ok])
  if (!ok || !user) {
    await db.sql.transaction(async (tx) => {
      await recordAudit(tx, {
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
    await recordAudit(tx, { actor: email, action: 'auth.signed-in', subject: { type: 'user', id: userId }, summary: `${email} signed in (${method === 'local' ? 'password' : 'single sign-on'})`, details: { ip, method } })
    return { ...session, userId, email }
  })
}
