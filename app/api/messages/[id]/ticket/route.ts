import { publicBaseUrl } from '@/lib/server/export/base-url'
import { buildMessageTicket } from '@/lib/server/export/ticket'
import { route } from '@/lib/server/http/handle-route'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'

export const dynamic = 'force-dynamic'

// GET /api/messages/{id}/ticket – one message as a redacted Markdown bug ticket ("Copy as ticket")
export const GET = route<{ id: string }>(async (request, { id }) => {
  const markdown = await buildMessageTicket(id, { redactor: await loadRedactor(), baseUrl: publicBaseUrl(request) })
  return new Response(markdown, { headers: { 'content-type': 'text/markdown; charset=utf-8', 'cache-control': 'private, no-store', 'x-content-type-options': 'nosniff' } })
})
