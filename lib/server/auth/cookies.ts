import 'server-only'
import type { Config } from '@/lib/server/platform/config'

/** Whether cookies must be Secure: the public URL is HTTPS (behind a TLS-terminating proxy, say). */
export const secureCookies = (config: Pick<Config, 'LAZARUS_PUBLIC_URL'>) => config.LAZARUS_PUBLIC_URL?.startsWith('https:') ?? false

/**
 * The session cookie's name. With HTTPS it carries the `__Host-` prefix: browsers then accept it only with Secure,
 * Path=/ and no Domain, so no sibling subdomain can plant or shadow it.
 */
export const sessionCookieName = (config: Pick<Config, 'LAZARUS_PUBLIC_URL'>) => (secureCookies(config) ? '__Host-lazarus_session' : 'lazarus_session')

export const oidcCookieName = (config: Pick<Config, 'LAZARUS_PUBLIC_URL'>) => (secureCookies(config) ? '__Host-lazarus_oidc' : 'lazarus_oidc')

/** The value of one cookie from the Cookie header (the first, if a browser sends the name twice). */
export function readCookie(request: Request, name: string): string | null {
  const header = request.headers.get('cookie')
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    if (part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    return /^[A-Za-z0-9_-]+$/.test(value) ? value : null
  }
  return null
}

export type CookieOptions = { maxAgeSeconds?: number; secure: boolean; path?: string }

/** HttpOnly (no script reads it) and SameSite=Lax (not sent on cross-site POSTs); `maxAgeSeconds: 0` deletes. */
export function serializeCookie(name: string, value: string, { maxAgeSeconds, secure, path = '/' }: CookieOptions): string {
  const parts = [`${name}=${value}`, `Path=${path}`, 'HttpOnly', 'SameSite=Lax']
  if (secure) parts.push('Secure')
  if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`)
  return parts.join('; ')
}
