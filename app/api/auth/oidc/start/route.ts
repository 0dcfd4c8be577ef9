import { oidcCookieName, secureCookies, serializeCookie } from '@/lib/server/auth/cookies'
import { startOidcSignIn } from '@/lib/server/auth/oidc'
import { route } from '@/lib/server/platform/http/handle-route'

export const dynamic = 'force-dynamic'

// GET /api/auth/oidc/start?returnTo=/path – redirects to the single sign-on provider
export const GET = route({ permission: 'public' }, async ({ db, config, origin, query }) => {
  const { url, browserSecret } = await startOidcSignIn({ db, config, origin, returnTo: query.returnTo ?? '/' })
  const cookie = serializeCookie(oidcCookieName(config), browserSecret, { secure: secureCookies(config), maxAgeSeconds: 600 })
  return new Response(null, { status: 302, headers: { location: url, 'set-cookie': cookie, 'cache-control': 'no-store' } })
})
