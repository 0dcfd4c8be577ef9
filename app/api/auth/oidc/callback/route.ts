import { oidcCookieName, readCookie, secureCookies, serializeCookie } from '@/lib/server/auth/cookies'
import { finishOidcSignIn } from '@/lib/server/auth/oidc'
import { sessionCookie } from '@/lib/server/auth/session-cookie'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { route } from '@/lib/server/platform/http/handle-route'

export const dynamic = 'force-dynamic'

// GET /api/auth/oidc/callback – the provider sends the browser back here; a session, then the page it came from
export const GET = route({ permission: 'public' }, async ({ request, db, config, origin, clientIp }) => {
  const url = new URL(request.url)
  const headers = new Headers({ 'cache-control': 'no-store' })
  headers.append('set-cookie', serializeCookie(oidcCookieName(config), '', { secure: secureCookies(config), maxAgeSeconds: 0 }))
  try {
    const providerError = url.searchParams.get('error')
    // By code point: a cut through a surrogate pair would make encodeURIComponent below throw (a 500).
    if (providerError) throw new AppError('forbidden', `The provider refused the sign-in (${Array.from(providerError).slice(0, 100).join('')})`)
    const result = await finishOidcSignIn({
      db,
      config,
      origin,
      pathAndQuery: url.pathname + url.search,
      browserSecret: readCookie(request, oidcCookieName(config)),
      ip: clientIp,
      userAgent: request.headers.get('user-agent'),
    })
    headers.append('set-cookie', sessionCookie(config, result.secret, result.expiresAt))
    headers.set('location', origin + result.returnTo)
  } catch (error) {
    // A browser navigation: show the reason on the sign-in page rather than a JSON error.
    const message = error instanceof AppError ? error.message : 'Single sign-on failed'
    headers.set('location', `${origin}/sign-in?error=${encodeURIComponent(message)}`)
  }
  return new Response(null, { status: 303, headers })
})
