import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createUser } from '@/lib/server/users/create-user'
import { listUsers } from '@/lib/server/users/list-users'
import { createUserSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// GET /api/users – every user with their roles
export const GET = route({ permission: 'admin' }, async ({ db }) => json(await listUsers({ db })))

// POST /api/users – {email, roles}: a local account; answers a one-time link for its owner to set a password
export const POST = route({ permission: 'admin' }, async ({ request, db, actor, origin }) =>
  json(await createUser({ db, actor, input: await readJson(request, createUserSchema), baseUrl: origin }), { status: 201 }),
)
