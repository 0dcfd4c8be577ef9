import { hasPermission } from '@/lib/server/auth/principal'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createPause } from '@/lib/server/pauses/create-pause'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { createPauseSchema, listPausesQuerySchema } from '@/lib/shared/schemas/pause'

export const dynamic = 'force-dynamic'

// GET /api/pauses – the pause registry with its version; guards poll it (their poll is also their heartbeat) with a
// token that reads their own queue only; ?status=all includes resumed pauses. Only a guard token's poll is recorded as
// a heartbeat: anyone else who names an `instance` reads the list but cannot make a queue look protected.
export const GET = route({ permission: 'guard' }, async ({ db, query, principal, sourceIds }) => {
  const { instance, guardVersion, registryVersion, ...input } = listPausesQuerySchema.parse(query)
  const guard = principal.kind !== 'anonymous' ? principal.guardQueue : null
  if (guard) return json(await listPauses({ db, ...input, instance, guardVersion, registryVersion, vhost: guard.vhost, queue: guard.queue }))
  return json(await listPauses({ db, ...input, sourceIds: await sourceIds('pauses:read') }))
})

// POST /api/pauses – pause one entity (entityKey) or the whole queue (entityKey null) of a source's consumer queue
export const POST = route({ permission: 'pauses:write' }, async ({ request, db, actor, principal, sourceIds }) =>
  json(
    await createPause({ db, input: await readJson(request, createPauseSchema), actor, allowAnyQueue: hasPermission(principal, 'admin'), sourceIds: await sourceIds() }),
    { status: 201 },
  ),
)
