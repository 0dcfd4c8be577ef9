import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { restoreMessages } from '@/lib/server/messages/restore-messages'
import { resolveSchema } from '@/lib/shared/schemas/replay'

// POST /api/messages/restore – {selection, reason} as for resolve: resolved messages back to dead
export const POST = route({ permission: 'messages:resolve' }, async ({ request, db, actor, sourceIds }) =>
  json(await restoreMessages({ db, input: await readJson(request, resolveSchema), actor, sourceIds: await sourceIds() })),
)
