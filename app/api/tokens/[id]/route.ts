import { json, route } from '@/lib/server/platform/http/handle-route'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { revokeApiToken } from '@/lib/server/users/revoke-api-token'

export const dynamic = 'force-dynamic'

// DELETE /api/tokens/{id} – revoke at once
export const DELETE = route<{ id: string }>({ permission: 'signed-in' }, async ({ db, signedIn, params }) =>
  json(await revokeApiToken({ db, principal: signedIn(), id: String(parseId(params.id, 'token')) })),
)
