import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createSource } from '@/lib/server/sources/create-source'
import { listSources } from '@/lib/server/sources/list-sources'
import { createSourceSchema } from '@/lib/shared/schemas/source'

export const dynamic = 'force-dynamic'

// GET /api/sources – DLQs being drained, with drained counts and live broker depth
export const GET = route({ permission: 'sources:read' }, async ({ db, sourceIds }) => json(await listSources({ db, sourceIds: await sourceIds() })))

// POST /api/sources – start draining another DLQ
export const POST = route({ permission: 'admin' }, async ({ request, db, root, actor }) =>
  json(await createSource({ db, sourcesChanged: root.sourcesChanged, input: await readJson(request, createSourceSchema), actor }), { status: 201 }),
)
