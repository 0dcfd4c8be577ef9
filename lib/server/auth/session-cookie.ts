import 'server-only'
import type { Config } from '@/lib/server/platform/config'
import { secureCookies, serializeCookie, sessionCookieName } from './cookies'

/** The Set-Cookie header that hands a new session to the browser (it lasts until the session's absolute end). */
export function sessionCookie(config: Config, secret: string, expiresAt: Date): string {
  return serializeCookie(sessionCookieName(config), secret, { secure: secureCookies(config), maxAgeSeconds: (expiresAt.getTime() - Date.now()) / 1000 })
}

export function clearedSessionCookie(config: Config): string {
  return serializeCookie(sessionCookieName(config), '', { secure: secureCookies(config), maxAgeSeconds: 0 })
}
