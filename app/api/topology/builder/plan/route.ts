import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { buildTopologyPlan } from '@/lib/server/topology/builder/build-topology-plan'
import { builderVhost } from '@/lib/server/topology/builder/builder-vhost'
import { planTopologySchema } from '@/lib/shared/topology/builder-api'

export const dynamic = 'force-dynamic'

// POST /api/topology/builder/plan – a three-tier retry topology's declarations, and what applying it would create
export const POST = route({ permission: 'topology:read' }, async ({ request }) => {
  const { vhost, spec } = await readJson(request, planTopologySchema)
  return json(await buildTopologyPlan({ vhost: builderVhost(vhost), spec }))
})
