import { publicBaseUrl } from '@/lib/server/export/base-url'
import { exportMessages } from '@/lib/server/export/stream-export'
import { route, searchParamsOf } from '@/lib/server/http/handle-route'
import { exportQuerySchema } from '@/lib/shared/schemas/export'

export const dynamic = 'force-dynamic'

// GET /api/export?format=jsonl|csv|md&…filters or ids=1,2,3 – a redacted, streamed download
export const GET = route(async (request) => {
  const file = await exportMessages(exportQuerySchema.parse(searchParamsOf(request)), { baseUrl: publicBaseUrl(request) })
  return new Response(file.body, {
    headers: {
      'content-type': file.contentType,
      'content-disposition': `attachment; filename="${file.filename}"`,
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
    },
  })
})
