import { route, json } from '@/lib/server/platform/http/handle-route'
import { guardStatus } from '@/lib/server/pauses/guard-status'
import { guardStatusQuerySchema } from '@/lib/shared/schemas/pause'

export const dynamic = 'force-dynamic'

// GET /api/pauses/guards – guards listening (and up to date) on a source's consumer queue (?sourceId, ?queue), or on
// every visible source's
export const GET = route({ permission: 'pauses:read' }, async ({ db, query, sourceIds }) =>
  json(await guardStatus({ db, ...guardStatusQuerySchema.parse(query), sourceIds: await sourceIds() })),
)
