import { json, route } from '@/lib/server/platform/http/handle-route'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { deleteSavedView } from '@/lib/server/views/delete-saved-view'

export const dynamic = 'force-dynamic'

// DELETE /api/views/{id} – deletes one of the caller's saved views
export const DELETE = route<{ id: string }>({ permission: 'messages:read' }, async ({ db, signedIn, params }) =>
  json(await deleteSavedView({ db, principal: signedIn(), id: String(parseId(params.id, 'saved view')) })),
)
