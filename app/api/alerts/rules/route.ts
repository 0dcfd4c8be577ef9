import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createAlertRule } from '@/lib/server/alerts/create-alert-rule'
import { createAlertRuleSchema } from '@/lib/shared/schemas/alert'

export const dynamic = 'force-dynamic'

// POST /api/alerts/rules – {kind: source-rate|group-rate, thresholdPerMinute, sourceId?|groupId?, windowMinutes?, cooldownMinutes?} or {kind: new-group}
export const POST = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await createAlertRule({ db, input: await readJson(request, createAlertRuleSchema), actor }), { status: 201 }),
)
