import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getWebhookSettings, updateWebhookSettings } from '@/lib/server/alerts/webhook-settings'
import { updateWebhookSettingsSchema } from '@/lib/shared/schemas/webhook-settings'

export const dynamic = 'force-dynamic'

// GET /api/settings/webhooks – the hosts webhooks may reach although they are not public, and the webhook cap
export const GET = route({ permission: 'admin' }, async ({ db }) => json(await getWebhookSettings({ db })))

// PUT /api/settings/webhooks – {allowedHosts}: replace the stored allow-list
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateWebhookSettings({ db, input: await readJson(request, updateWebhookSettingsSchema), actor })),
)
