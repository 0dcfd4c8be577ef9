import { beginExport, callerKey, releaseWhenDone } from '@/lib/server/platform/http/request-limits'
import { exportMessages } from '@/lib/server/export/stream-export'
import { route } from '@/lib/server/platform/http/handle-route'
import { redactedViewFor } from '@/lib/server/messages/redacted-view'
import { exportQuerySchema } from '@/lib/shared/schemas/export'

export const dynamic = 'force-dynamic'

// GET /api/export?format=jsonl|csv|md&…filters or ids=1,2,3 – a redacted, streamed download
export const GET = route({ permission: 'messages:read' }, async ({ db, query, origin, sourceIds, signedIn, config }) => {
  const input = exportQuerySchema.parse(query)
  const release = await beginExport(config, callerKey(signedIn()))
  let file
  try {
    const view = await redactedViewFor({ db, rawSourceIds: await sourceIds('messages:raw') })
    file = await exportMessages(input, { db, baseUrl: origin, sourceIds: await sourceIds(), view })
  } catch (error) {
    release()
    throw error
  }
  return new Response(releaseWhenDone(file.body, release), {
    headers: {
      'content-type': file.contentType,
      'content-disposition': `attachment; filename="${file.filename}"`,
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
    },
  })
})
