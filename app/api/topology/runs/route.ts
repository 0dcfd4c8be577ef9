import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { runTopologyNow } from '@/lib/server/topology/run-topology-now'
import { runTopologySchema } from '@/lib/shared/schemas/topology'

export const dynamic = 'force-dynamic'

// POST /api/topology/runs – {vhost?}: run the doctor now; answers the graph and findings it recorded
export const POST = route({ permission: 'topology:write' }, async ({ request, db, root }) => json(await runTopologyNow({ db, engines: root.engines, ...(await readJson(request, runTopologySchema)) })))
