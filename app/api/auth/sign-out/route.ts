import { signOut } from '@/lib/server/auth/sign-out'
import { clearedSessionCookie } from '@/lib/server/auth/session-cookie'
import { json, route } from '@/lib/server/platform/http/handle-route'

export const dynamic = 'force-dynamic'

// POST /api/auth/sign-out – ends this browser's session (also when it already expired)
export const POST = route({ permission: 'public' }, async ({ request, db, config, principal }) => {
  await signOut({ db, config, request, principal })
  return json({ signedIn: false }, { headers: { 'set-cookie': clearedSessionCookie(config) } })
})
