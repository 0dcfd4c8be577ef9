import { isSignedIn } from '@/lib/server/auth/principal'
import { getHealth } from '@/lib/server/health/get-health'
import { json, route } from '@/lib/server/platform/http/handle-route'

export const dynamic = 'force-dynamic'

// GET /api/health – 200 whenever the web process is up; `{status}` to anyone (load balancers, probes, any Host),
// the database, broker and drainer details only to signed-in callers
export const GET = route({ permission: 'public' }, async ({ db, root, principal }) => {
  const health = await getHealth({ db, broker: root.brokers.health, engines: root.engines })
  return json(isSignedIn(principal) ? health : { status: health.status })
})
