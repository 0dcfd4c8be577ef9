import { getHealth } from '@/lib/server/health/get-health'
import { json, route } from '@/lib/server/http/handle-route'

export const dynamic = 'force-dynamic'

// GET /api/health – database and broker state; 200 whenever the web process is up
export const GET = route(async () => json(await getHealth()))
