import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { previewRedaction } from '@/lib/server/redaction/redaction-rules'
import { redactionPreviewSchema } from '@/lib/shared/schemas/redaction'

export const dynamic = 'force-dynamic'

// POST /api/settings/redaction/preview – what the stored (or the given, unsaved) rules make of a sample text
export const POST = route({ permission: 'admin' }, async ({ request, db }) => json(await previewRedaction({ db, input: await readJson(request, redactionPreviewSchema) })))
