import { describeSession } from '@/lib/server/auth/describe-session'
import { json, route } from '@/lib/server/platform/http/handle-route'

export const dynamic = 'force-dynamic'

// GET /api/auth/session – who is signed in and with which roles, and which sign-in methods this Lazarus offers
export const GET = route({ permission: 'public' }, async ({ db, config, principal }) => json(await describeSession({ db, config, principal })))
