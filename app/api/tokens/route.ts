import { json, readJson, route } from '@/lib/server/platform/http/handle-route'
import { createApiToken } from '@/lib/server/users/create-api-token'
import { listApiTokens } from '@/lib/server/users/list-api-tokens'
import { createTokenSchema } from '@/lib/shared/schemas/user'

export const dynamic = 'force-dynamic'

// GET /api/tokens – the caller's API tokens (an admin's: everyone's); never the secrets
export const GET = route({ permission: 'signed-in' }, async ({ db, signedIn }) => json(await listApiTokens({ db, principal: signedIn() })))

// POST /api/tokens – {name, role | scope, sourcePattern?, guardQueue?, expiresInDays?}: the token, shown this once
export const POST = route({ permission: 'signed-in' }, async ({ request, db, signedIn }) =>
  json(await createApiToken({ db, principal: signedIn(), input: await readJson(request, createTokenSchema) }), { status: 201 }),
)
