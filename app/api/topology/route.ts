import { json, route } from '@/lib/server/platform/http/handle-route'
import { getTopology } from '@/lib/server/topology/get-topology'
import { topologyQuerySchema } from '@/lib/shared/schemas/topology'

export const dynamic = 'force-dynamic'

// GET /api/topology?vhost=&source= – the last run's graph (exchanges, queues, bindings, dead-letter edges) and findings
export const GET = route({ permission: 'topology:read' }, async ({ db, query }) => {
  const { vhost, source } = topologyQuerySchema.parse(query)
  return json(await getTopology({ db, vhost, sourceId: source }))
})
