import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { deleteAlertRule } from '@/lib/server/alerts/delete-alert-rule'
import { updateAlertRule } from '@/lib/server/alerts/update-alert-rule'
import { updateAlertRuleSchema } from '@/lib/shared/schemas/alert'

export const dynamic = 'force-dynamic'

// PATCH /api/alerts/rules/{id} – {enabled}
export const PATCH = route<{ id: string }>({ permission: 'admin' }, async ({ request, db, actor, params: { id } }) =>
  json(await updateAlertRule({ db, id, ...(await readJson(request, updateAlertRuleSchema)), actor })),
)

// DELETE /api/alerts/rules/{id}
export const DELETE = route<{ id: string }>({ permission: 'admin' }, async ({ db, actor, params: { id } }) => {
  await deleteAlertRule({ db, id, actor })
  return new Response(null, { status: 204 })
})
