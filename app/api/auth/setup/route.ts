import { completeSetup } from '@/lib/server/auth/first-run'
import { sessionCookie } from '@/lib/server/auth/session-cookie'
import { startSession } from '@/lib/server/auth/sign-in'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { setupSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// POST /api/auth/setup – {token, email, password}: the first admin, with the one-time link printed at start-up
export const POST = route({ permission: 'public' }, async ({ request, db, config, clientIp }) => {
  const input = await readJson(request, setupSchema)
  const { userId } = await completeSetup({ db, ...input })
  const session = await startSession({ db, config, userId, email: input.email, method: 'local', ip: clientIp, userAgent: request.headers.get('user-agent') })
  return json({ signedIn: true, email: input.email }, { status: 201, headers: { 'set-cookie': sessionCookie(config, session.secret, session.expiresAt) } })
})
