import { setPasswordWithLink } from '@/lib/server/auth/first-run'
import { sessionCookie } from '@/lib/server/auth/session-cookie'
import { startSession } from '@/lib/server/auth/sign-in'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { setPasswordSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// POST /api/auth/set-password – {token, password}: an invited user's first password, with the link an admin passed on
export const POST = route({ permission: 'public' }, async ({ request, db, config, clientIp }) => {
  const { userId, email } = await setPasswordWithLink({ db, ...(await readJson(request, setPasswordSchema)) })
  const session = await startSession({ db, config, userId, email, method: 'local', ip: clientIp, userAgent: request.headers.get('user-agent') })
  return json({ signedIn: true, email }, { headers: { 'set-cookie': sessionCookie(config, session.secret, session.expiresAt) } })
})
