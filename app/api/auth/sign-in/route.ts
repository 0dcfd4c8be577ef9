import { sessionCookie } from '@/lib/server/auth/session-cookie'
import { signInWithPassword } from '@/lib/server/auth/sign-in'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { signInSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// POST /api/auth/sign-in – {email, password}: a session cookie; limited per account and per address
export const POST = route({ permission: 'public' }, async ({ request, db, config, clientIp }) => {
  const { email, password } = await readJson(request, signInSchema)
  const session = await signInWithPassword({ db, config, email, password, ip: clientIp, userAgent: request.headers.get('user-agent') })
  return json({ signedIn: true, email: session.email }, { headers: { 'set-cookie': sessionCookie(config, session.secret, session.expiresAt) } })
})
