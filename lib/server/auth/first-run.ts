import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Config } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { consoleNotice, type Logger } from '@/lib/server/platform/log'
import { countUsers, insertAdmin, lockFirstRun, setPasswordHash } from './auth-store'
import { consumeOneTimeLink, createOneTimeLink } from './one-time-links'
import { hashPassword } from './passwords'

const SETUP_LINK_HOURS = 24

async function createFirstAdmin({ sql, email, password, displayName, actor }: { sql: Sql; email: string; password: string; displayName?: string | null; actor: string }): Promise<string> {
  const id = await insertAdmin({ sql, email, displayName: displayName ?? null, passwordHash: await hashPassword(password) })
  await recordAudit({ sql, actor, action: 'user.created', subject: { type: 'user', id }, summary: `Created the first admin, ${email}`, details: { before: null, after: { email, roles: ['admin'] } } })
  return id
}

/** Where people reach this Lazarus, for links written to the log. */
export function consoleBaseUrl(config: Pick<Config, 'LAZARUS_PUBLIC_URL' | 'PORT'>): string {
  return (config.LAZARUS_PUBLIC_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, '')
}

/**
 * First run (docs/security.md): with no user yet, create the first admin from LAZARUS_ADMIN_EMAIL and
 * LAZARUS_ADMIN_PASSWORD when both are set, else log a one-time setup link. There is no default password anywhere.
 * Several processes may start at once: the advisory lock makes one of them do it.
 */
export async function prepareFirstRun({ db, config, log }: { db: Db; config: Config; log: Logger }): Promise<void> {
  if ((await countUsers({ sql: db.sql })) > 0) return
  const setupUrl = await db.sql.transaction(async (tx) => {
    await lockFirstRun({ sql: tx })
    if ((await countUsers({ sql: tx })) > 0) return null
    if (config.LAZARUS_ADMIN_EMAIL && config.LAZARUS_ADMIN_PASSWORD) {
      await createFirstAdmin({ sql: tx, email: config.LAZARUS_ADMIN_EMAIL, password: config.LAZARUS_ADMIN_PASSWORD, actor: 'LAZARUS_ADMIN_EMAIL' })
      log.info('created the first admin from LAZARUS_ADMIN_EMAIL and LAZARUS_ADMIN_PASSWORD: sign in with them', { email: config.LAZARUS_ADMIN_EMAIL })
      return null
    }
    if (!config.LAZARUS_LOCAL_ACCOUNTS) return null
    const secret = await createOneTimeLink({ sql: tx, purpose: 'setup', userId: null, validHours: SETUP_LINK_HOURS, replacePrevious: false })
    return `${consoleBaseUrl(config)}/setup#token=${secret}`
  })
  // Announced once the link is committed, so a link that is shown works.
  if (setupUrl === null) return
  // A warning, so LAZARUS_LOG_LEVEL=warn still shows it: without it (or the variables) nobody can sign in.
  log.warn(
    `Lazarus has no users yet. Create the first admin with this one-time link (valid ${SETUP_LINK_HOURS} hours; a restart logs a new one while no user exists), or set LAZARUS_ADMIN_EMAIL and LAZARUS_ADMIN_PASSWORD before starting`,
    { setupUrl },
  )
  // In a JSON log line the link is easy to miss: the person who just started Lazarus gets it as one plain line too.
  consoleNotice([`Lazarus: create the first admin at ${setupUrl}  (valid ${SETUP_LINK_HOURS} h)`])
}

/** POST /api/auth/setup: the holder of the setup link creates the first admin (only while no user exists). */
export async function completeSetup({ db, token, email, password, displayName }: { db: Db; token: string; email: string; password: string; displayName?: string }): Promise<{ userId: string }> {
  return db.sql.transaction(async (tx) => {
    await lockFirstRun({ sql: tx })
    const link = await consumeOneTimeLink({ sql: tx, purpose: 'setup', secret: token })
    if (!link) throw new AppError('forbidden', 'This setup link is not valid (used, expired or mistyped); restart Lazarus for a new one')
    if ((await countUsers({ sql: tx })) > 0) throw new AppError('conflict', 'Lazarus already has users; sign in instead')
    return { userId: await createFirstAdmin({ sql: tx, email, password, displayName, actor: email }) }
  })
}

/** POST /api/auth/set-password: an invited user sets their password with the link an admin passed on. */
export async function setPasswordWithLink({ db, token, password }: { db: Db; token: string; password: string }): Promise<{ userId: string; email: string }> {
  const hash = await hashPassword(password)
  return db.sql.transaction(async (tx) => {
    const link = await consumeOneTimeLink({ sql: tx, purpose: 'set-password', secret: token })
    if (!link?.userId) throw new AppError('forbidden', 'This link is not valid (used, expired or mistyped); ask an admin for a new one')
    const email = await setPasswordHash({ sql: tx, userId: link.userId, passwordHash: hash })
    if (email === null) throw new AppError('forbidden', 'This account is disabled')
    await recordAudit({ sql: tx, actor: email, action: 'user.updated', subject: { type: 'user', id: link.userId }, summary: `${email} set a password`, details: { before: null, after: { passwordSet: true } } })
    return { userId: link.userId, email }
  })
}
