import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { deleteSource } from '@/lib/server/sources/delete-source'
import { updateSource } from '@/lib/server/sources/update-source'
import { updateSourceSchema } from '@/lib/shared/schemas/source'

type Params = { id: string }

// PATCH /api/sources/{id} – entity-key rule, order sensitivity, default replay target, enabled, removal after capture
export const PATCH = route<Params>({ permission: 'admin' }, async ({ request, db, root, actor, params: { id } }) =>
  json(await updateSource({ db, sourcesChanged: root.sourcesChanged, id, input: await readJson(request, updateSourceSchema), actor })),
)

// DELETE /api/sources/{id} – stop draining a source that stored nothing
export const DELETE = route<Params>({ permission: 'admin' }, async ({ db, root, actor, params: { id } }) =>
  json(await deleteSource({ db, sourcesChanged: root.sourcesChanged, id, actor })),
)
