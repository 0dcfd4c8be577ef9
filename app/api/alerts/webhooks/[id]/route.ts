import { route } from '@/lib/server/platform/http/handle-route'
import { deleteWebhook } from '@/lib/server/alerts/delete-webhook'

export const dynamic = 'force-dynamic'

// DELETE /api/alerts/webhooks/{id}
export const DELETE = route<{ id: string }>({ permission: 'admin' }, async ({ db, actor, params: { id } }) => {
  await deleteWebhook({ db, id, actor })
  return new Response(null, { status: 204 })
})
