import { json, route } from '@/lib/server/http/handle-route'
import { getMessage } from '@/lib/server/messages/get-message'

// GET /api/messages/{id} – everything stored and derived for one dead letter
export const GET = route<{ id: string }>(async (_request, { id }) => json(await getMessage({ id })))
