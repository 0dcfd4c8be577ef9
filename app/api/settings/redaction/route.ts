import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { getRedactionSettings, updateRedactionRules } from '@/lib/server/redaction/redaction-rules'
import { updateRedactionSchema } from '@/lib/shared/schemas/redaction'

export const dynamic = 'force-dynamic'

// GET /api/settings/redaction – the redaction rules every export and ticket applies, and the built-in detectors
export const GET = route({ permission: 'admin' }, async ({ db }) => json(await getRedactionSettings({ db })))

// PUT /api/settings/redaction – replace the whole rule set
export const PUT = route({ permission: 'admin' }, async ({ request, db, actor }) =>
  json(await updateRedactionRules({ db, input: await readJson(request, updateRedactionSchema), actor })),
)
