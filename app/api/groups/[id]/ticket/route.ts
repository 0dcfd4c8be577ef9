import { beginExport, callerKey } from '@/lib/server/platform/http/request-limits'
import { buildGroupTicket } from '@/lib/server/export/ticket'
import { route } from '@/lib/server/platform/http/handle-route'
import { loadRedactor } from '@/lib/server/redaction/redaction-rules'

export const dynamic = 'force-dynamic'

// GET /api/groups/{id}/ticket – the group as a redacted Markdown bug ticket ("Copy as ticket")
export const GET = route<{ id: string }>({ permission: 'messages:read' }, async ({ db, origin, sourceIds, signedIn, config, params: { id } }) => {
  const release = await beginExport(config, callerKey(signedIn()))
  const markdown = await buildGroupTicket(id, { db, redactor: await loadRedactor({ sql: db.sql }), baseUrl: origin, sourceIds: await sourceIds() }).finally(release)
  return new Response(markdown, { headers: { 'content-type': 'text/markdown; charset=utf-8', 'cache-control': 'private, no-store', 'x-content-type-options': 'nosniff' } })
})
