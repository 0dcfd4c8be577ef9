import { json, readBody, readJson, route } from '@/lib/server/platform/http/handle-route'
import { revisionRequestBytes } from '@/lib/server/messages/revision-request-limit'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { createRevision } from '@/lib/server/messages/create-revision'
import { listRevisions } from '@/lib/server/messages/list-revisions'
import { createRevisionSchema, type CreateRevisionInput } from '@/lib/shared/schemas/revision'

// GET /api/messages/{id}/revisions – the edits of a message, with diffs (operators: they show raw bodies)
export const GET = route<{ id: string }>({ permission: 'messages:raw' }, async ({ db, sourceIds, params: { id } }) =>
  json(await listRevisions({ db, id, sourceIds: await sourceIds() })),
)

// POST /api/messages/{id}/revisions – a new revision: JSON {body?, headers?, properties?, basedOn?}, or multipart with
// the replacement body as the part "file" and the rest as JSON in the part "edit"
export const POST = route<{ id: string }>({ permission: 'messages:edit' }, async ({ request, db, actor, config, sourceIds, params: { id } }) => {
  const maxBytes = revisionRequestBytes(config.LAZARUS_REPLAY_MAX_BODY_BYTES)
  const input = (request.headers.get('content-type') ?? '').startsWith('multipart/form-data') ? await readMultipart(request, maxBytes) : await readJson(request, createRevisionSchema, { maxBytes })
  const created = await createRevision({ db, id, input, actor, maxBodyBytes: config.LAZARUS_REPLAY_MAX_BODY_BYTES, sourceIds: await sourceIds() })
  return json(created, { status: 201 })
})

/** The form is read whole, but never more than `maxBytes` of it (a chunked body has no declared length to refuse). */
async function readMultipart(request: Request, maxBytes: number): Promise<CreateRevisionInput> {
  const bytes = await readBody(request, maxBytes)
  let form: FormData
  try {
    form = await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type') ?? '' } }).formData()
  } catch {
    throw new AppError('invalid', 'The multipart body could not be read')
  }
  const file = form.get('file')
  const edit = form.get('edit')
  if (!(file instanceof Blob)) throw new AppError('invalid', 'The multipart body needs the replacement body as the part "file"')
  let rest: unknown = {}
  if (typeof edit === 'string') {
    try {
      rest = JSON.parse(edit)
    } catch {
      throw new AppError('invalid', 'The part "edit" must be JSON')
    }
  }
  const base64 = Buffer.from(await file.arrayBuffer()).toString('base64')
  return createRevisionSchema.parse({ ...(rest as object), body: { kind: 'base64', base64 } })
}
