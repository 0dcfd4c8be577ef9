import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getReplayApprovalSettings, updateReplayApprovalSettings } from '@/lib/server/replay/replay-approval-settings'
import { updateReplayApprovalSettingsSchema } from '@/lib/shared/schemas/replay-approval'

export const dynamic = 'force-dynamic'

// GET /api/settings/replay-approval – which replays need a second operator's approval, and how long they wait
export const GET = route({ permission: 'messages:replay' }, async ({ db }) => json(await getReplayApprovalSettings({ db })))

// PUT /api/settings/replay-approval – {aboveMessages, editedMessages, customTarget, criticalSources, ttlSeconds}
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateReplayApprovalSettings({ db, input: await readJson(request, updateReplayApprovalSettingsSchema), actor })),
)
