import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { applyTopology } from '@/lib/server/topology/builder/apply-topology'
import { builderVhost } from '@/lib/server/topology/builder/builder-vhost'
import { applyTopologySchema } from '@/lib/shared/topology/builder-api'

export const dynamic = 'force-dynamic'

// POST /api/topology/builder/apply – declare the missing objects of a three-tier retry topology (never changes any)
export const POST = route({ permission: 'admin' }, async ({ request, db, actor }) => {
  const { vhost, spec } = await readJson(request, applyTopologySchema)
  const applied = await applyTopology({ db, vhost: builderVhost(vhost), spec, actor })
  return json(applied, { status: applied.created.length ? 201 : 200 })
})
