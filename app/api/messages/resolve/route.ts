import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { resolveMessages } from '@/lib/server/messages/resolve-messages'
import { resolveSchema } from '@/lib/shared/schemas/replay'

// POST /api/messages/resolve – mark a selection or a group resolved, with a reason, without replaying
export const POST = route({ permission: 'messages:resolve' }, async ({ request, db, actor, sourceIds }) =>
  json(await resolveMessages({ db, input: await readJson(request, resolveSchema), actor, sourceIds: await sourceIds() })),
)
