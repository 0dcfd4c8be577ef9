import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getReplayTargetSettings, updateReplayTargetSettings } from '@/lib/server/replay/replay-target-settings'
import { updateReplayTargetSettingsSchema } from '@/lib/shared/schemas/replay-targets'

export const dynamic = 'force-dynamic'

// GET /api/settings/replay-targets – the exchange patterns custom replay targets may name (stored and from the environment)
export const GET = route({ permission: 'messages:replay' }, async ({ db }) => json(await getReplayTargetSettings({ db })))

// PUT /api/settings/replay-targets – {customTargetPatterns}: replace the stored allow-list
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateReplayTargetSettings({ db, input: await readJson(request, updateReplayTargetSettingsSchema), actor })),
)
