import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createWebhook } from '@/lib/server/alerts/create-webhook'
import { createWebhookSchema } from '@/lib/shared/schemas/alert'

export const dynamic = 'force-dynamic'

// POST /api/alerts/webhooks – {url, format?, routingKey?}: every alert is POSTed there in the webhook's format
export const POST = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await createWebhook({ db, ...(await readJson(request, createWebhookSchema)), actor }), { status: 201 }),
)
