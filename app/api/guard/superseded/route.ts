import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { recordSuperseded } from '@/lib/server/replay/record-superseded'
import { supersededReportSchema } from '@/lib/shared/schemas/replay'

export const dynamic = 'force-dynamic'

// POST /api/guard/superseded – a guard dropped a replayed or released message older than a version it had let through;
// recorded on the job's item (docs/ARCHITECTURE.md#entity-versions). Only a guard token for the reported queue counts.
export const POST = route({ permission: 'guard' }, async ({ request, db, actor, principal }) => {
  const input = await readJson(request, supersededReportSchema)
  const guardQueue = principal.kind !== 'anonymous' ? principal.guardQueue : null
  return json(await recordSuperseded({ db, input, actor, guardQueue }))
})
