import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getTraceSettings, updateTraceSettings } from '@/lib/server/traces/trace-settings'
import { updateTraceSettingsSchema } from '@/lib/shared/schemas/trace-settings'

export const dynamic = 'force-dynamic'

// GET /api/settings/traces – the "Open trace" link template: the stored one, the environment's and the one in effect
export const GET = route({ permission: 'admin' }, async ({ db }) => json(await getTraceSettings({ db })))

// PUT /api/settings/traces – {urlTemplate}: an http(s) URL with {traceId} (and {spanId}), or null to use the environment's
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateTraceSettings({ db, input: await readJson(request, updateTraceSettingsSchema), actor })),
)
