import { json, route } from '@/lib/server/platform/http/handle-route'
import { getRetentionStatus } from '@/lib/server/retention/get-retention-status'

export const dynamic = 'force-dynamic'

// GET /api/settings/retention – the retention period, the store's size and what retention removes next
export const GET = route({ permission: 'admin' }, async ({ db }) => json(await getRetentionStatus({ db })))
