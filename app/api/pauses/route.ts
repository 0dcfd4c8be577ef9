import { hasPermission } from '@/lib/server/auth/principal'
import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createPause } from '@/lib/server/pauses/create-pause'
import { listPauses } from '@/lib/server/pauses/list-pauses'
import { createPauseSchema, listPausesQuerySchema } from '@/lib/shared/schemas/pause'

export const dynamic = 'force-dynamic'

// GET /api/pauses – the pause registry with its version; guards poll it (their poll is also their heartbeat) with a
// token that reads their own queue only; ?status=all includes resumed pauses. Only a guard token's poll is recorded as
// a heartbeat: anyone else who names an `instance` reads the list but cannot make a queue look protected.
// A poll without credentials is refused with what to send: guards before 2.0 send no token and must be upgraded.
const GUARD_TOKEN_REQUIRED =
  'GET /api/pauses needs credentials: a pause guard sends its guard token (the guard option `token`, as Authorization: Bearer <token>). ' +
  'Guards before 2.0 send none and are refused: install @lazarus/guard 2.x in the application and give it a guard token for its queue ' +
  '(README, "Upgrading guards in applications").'

export const GET = route({ permission: 'guard', unauthenticated: GUARD_TOKEN_REQUIRED }, async ({ db, query, principal, sourceIds }) => {
  const { instance, guardVersion, registryVersion, ...input } = listPausesQuerySchema.parse(query)
  const guard = principal.kind !== 'anonymous' ? principal.guardQueue : null
  if (guard) return json(await listPauses({ db, ...input, instance, guardVersion, registryVersion, vhost: guard.vhost, queue: guard.queue }))
  return json(await listPauses({ db, ...input, sourceIds: await sourceIds('pauses:read') }))
})

// POST /api/pauses – pause one entity (entityKey) or the whole queue (entityKey null) of a source's consumer queue
export const POST = route({ permission: 'pauses:write' }, async ({ request, db, root, actor, principal, sourceIds }) =>
  json(
    await createPause({ db, control: root.control, input: await readJson(request, createPauseSchema), actor, allowAnyQueue: hasPermission(principal, 'admin'), sourceIds: await sourceIds() }),
    { status: 201 },
  ),
)
