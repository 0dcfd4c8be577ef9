import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getReplayConfirmSettings, updateReplayConfirmSettings } from '@/lib/server/replay/replay-confirm-settings'
import { updateReplayConfirmSettingsSchema } from '@/lib/shared/schemas/replay-confirm'

export const dynamic = 'force-dynamic'

// GET /api/settings/replay-confirm – from how many messages a replay needs its count confirmed (confirmCount)
export const GET = route({ permission: 'messages:replay' }, async ({ db }) => json(await getReplayConfirmSettings({ db })))

// PUT /api/settings/replay-confirm – {largeJobMessages}
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateReplayConfirmSettings({ db, input: await readJson(request, updateReplayConfirmSettingsSchema), actor })),
)
