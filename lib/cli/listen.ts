import { isLoopbackHostname } from '@/lib/server/platform/addresses'
import { oidcEnabled } from '@/lib/server/auth/oidc'
import type { Config } from '@/lib/server/platform/config'
import { openDb } from '@/lib/server/platform/db'
import { logger } from '@/lib/server/platform/log'

/**
 * The address to listen on. HOSTNAME must name an address (or `localhost`) to leave loopback: shells and containers
 * often export HOSTNAME as the machine's name, which is not a request to listen publicly.
 */
export function listenAddress(hostname: string | undefined): string {
  if (!hostname) return '127.0.0.1'
  const isAddress = /^(\d{1,3}\.){3}\d{1,3}$/.test(hostname) || hostname.includes(':') || hostname === 'localhost'
  return isAddress ? hostname : '127.0.0.1'
}

/**
 * Listening beyond loopback exposes Lazarus to a network, so it needs (docs/security.md): LAZARUS_PUBLIC_URL (the only
 * Host it will answer, and the origin of its links), DATABASE_URL (the embedded database has no second pool and no
 * statement timeout) and a configured way to sign in. Missing any, start-up stops and says which.
 */
export async function refuseUnsafeListen({ hostname, config }: { hostname: string; config: Config }): Promise<void> {
  const missing = await unsafeListenProblems({ hostname, config })
  if (missing.length === 0) return
  const log = logger('listen')
  for (const needed of missing) log.error('Lazarus will not listen beyond loopback without this', { hostname, missing: needed })
  process.exit(78)
}

/** What is missing to listen on `hostname` (nothing on loopback). */
export async function unsafeListenProblems({ hostname, config }: { hostname: string; config: Config }): Promise<string[]> {
  if (isLoopbackHostname(hostname)) return []
  const missing: string[] = []
  if (!config.LAZARUS_PUBLIC_URL) missing.push('LAZARUS_PUBLIC_URL (the address people use, e.g. https://lazarus.example.com)')
  if (!config.DATABASE_URL) missing.push('DATABASE_URL (the embedded database is for a single local user)')
  if (!(await signInConfigured(config))) {
    missing.push('a way to sign in: LAZARUS_OIDC_ISSUER and LAZARUS_OIDC_CLIENT_ID, LAZARUS_TRUSTED_PROXIES, or LAZARUS_ADMIN_EMAIL and LAZARUS_ADMIN_PASSWORD (or a local user created on loopback first)')
  }
  return missing
}

async function signInConfigured(config: Config): Promise<boolean> {
  if (oidcEnabled(config) || config.LAZARUS_TRUSTED_PROXIES.length > 0) return true
  if (!config.LAZARUS_LOCAL_ACCOUNTS) return false
  if (config.LAZARUS_ADMIN_EMAIL && config.LAZARUS_ADMIN_PASSWORD) return true
  if (!config.DATABASE_URL) return false
  // A short-lived handle of its own: this runs before the process' database is opened (and migrated).
  const db = await openDb()
  try {
    const { rows } = await db.sql.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users WHERE password_hash IS NOT NULL AND disabled_at IS NULL) AS any')
    return rows[0].any
  } finally {
    await db.close()
  }
}
