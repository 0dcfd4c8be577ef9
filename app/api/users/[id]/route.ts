import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { updateUser } from '@/lib/server/users/update-user'
import { updateUserSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// PATCH /api/users/{id} – {roles?, displayName?, disabled?}; disabling ends the user's sessions
export const PATCH = route<{ id: string }>({ permission: 'admin' }, async ({ request, db, signedIn, params }) =>
  json(await updateUser({ db, principal: signedIn(), id: String(parseId(params.id, 'user')), input: await readJson(request, updateUserSchema) })),
)
