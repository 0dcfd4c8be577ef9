import 'server-only'
import type { Config } from '@/lib/server/platform/config'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { RequestFacts } from '@/lib/server/platform/request-facts'

/** The origin browsers of this Lazarus send: LAZARUS_PUBLIC_URL's, else the scheme and raw Host of the request. */
export function publicOrigin(request: Request, facts: RequestFacts, config: Pick<Config, 'LAZARUS_PUBLIC_URL'>): string {
  if (config.LAZARUS_PUBLIC_URL) return new URL(config.LAZARUS_PUBLIC_URL).origin
  if (!facts.viaFront || !facts.host) return new URL(request.url).origin
  return `${facts.https ? 'https' : 'http'}://${facts.host}`
}

/**
 * Cross-site request forgery (docs/security.md, "CSRF"): a request that changes something and is not authenticated
 * by a bearer token (a session cookie, a proxy's cookie, or nobody yet, as at sign-in) must be JSON and come from
 * our own origin. A page of another site can send neither: `Content-Type: application/json` needs a CORS preflight
 * we never grant, and browsers set `Origin` themselves. SameSite=Lax cookies are the second line.
 */
export function checkCrossSite(request: Request, facts: RequestFacts, config: Pick<Config, 'LAZARUS_PUBLIC_URL'>): void {
  const contentType = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase()
  if (contentType !== 'application/json') {
    throw new AppError('forbidden', 'Changes must be sent as Content-Type: application/json', { reason: 'csrf' })
  }
  const origin = request.headers.get('origin')
  if (!origin || origin !== publicOrigin(request, facts, config)) {
    throw new AppError('forbidden', 'Cross-site request refused: Origin does not match this Lazarus', { reason: 'csrf' })
  }
}
