import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { bulkEditMessages } from '@/lib/server/messages/bulk-edit-messages'
import { bulkEditSchema } from '@/lib/shared/schemas/revision'

// POST /api/messages/bulk-edit – {selection, operation, preview}: a header set or removed, or a JSON Patch, on every message
export const POST = route({ permission: 'messages:edit' }, async ({ request, db, actor, config, sourceIds }) =>
  json(await bulkEditMessages({ db, input: await readJson(request, bulkEditSchema), actor, maxBodyBytes: config.LAZARUS_REPLAY_MAX_BODY_BYTES, sourceIds: await sourceIds() })),
)
