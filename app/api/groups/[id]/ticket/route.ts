import { publicBaseUrl } from '@/lib/server/export/base-url'
import { buildGroupTicket } from '@/lib/server/export/ticket'
import { route } from '@/lib/server/http/handle-route'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}/ticket – the group as a redacted Markdown bug ticket ("Copy as ticket")
export const GET = route<{ id: string }>(async (request, { id }) => {
  const markdown = await buildGroupTicket(id, { redactor: await loadRedactor(), baseUrl: publicBaseUrl(request) })
  return new Response(markdown, { headers: { 'content-type': 'text/markdown; charset=utf-8', 'cache-control': 'private, no-store', 'x-content-type-options': 'nosniff' } })
})
