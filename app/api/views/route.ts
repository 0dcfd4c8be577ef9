import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { listSavedViews } from '@/lib/server/views/list-saved-views'
import { saveView } from '@/lib/server/views/save-view'
import { saveViewSchema } from '@/lib/shared/schemas/saved-view'

export const dynamic = 'force-dynamic'

// GET /api/views – the caller's saved message-list views, by name
export const GET = route({ permission: 'messages:read' }, async ({ db, signedIn }) => json(await listSavedViews({ db, principal: signedIn() })))

// POST /api/views – {name, query}: saves a view (a name already used gets the new query)
export const POST = route({ permission: 'messages:read' }, async ({ request, db, signedIn }) =>
  json(await saveView({ db, principal: signedIn(), input: await readJson(request, saveViewSchema) }), { status: 201 }),
)
