import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { acknowledgeFinding } from '@/lib/server/topology/acknowledge-finding'
import { acknowledgeFindingSchema } from '@/lib/shared/schemas/topology'

export const dynamic = 'force-dynamic'

// POST /api/topology/findings/{id}/acknowledge – {reason}: known and accepted; audited
export const POST = route<{ id: string }>({ permission: 'topology:write' }, async ({ request, db, actor, params: { id } }) =>
  json(await acknowledgeFinding({ db, id, actor, ...(await readJson(request, acknowledgeFindingSchema)) })),
)
