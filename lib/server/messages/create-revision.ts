import 'server-only'
import { recordAudit } from '@/lib/server/audit/record-audit'
import type { Db } from '@/lib/server/platform/db'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { CreateRevisionInput, RevisionCreatedDto } from '@/lib/shared/schemas/revision'
import { applyEdit, bodyEncodingOf, describeDiff, diffContent, isEmptyDiff } from './revision-content'
import { insertRevisions, loadEditBase, lockMessageEdits } from './revisions-store'

export type CreateRevisionOptions = {
  db: Db
  id: string
  input: CreateRevisionInput
  actor: string
  /** LAZARUS_REPLAY_MAX_BODY_BYTES: an edited body over it could never be replayed (413). */
  maxBodyBytes: number
} & SourceScope

/**
 * POST /api/messages/{id}/revisions: the edit becomes the message's next revision (docs/ARCHITECTURE.md#revisions);
 * the stored message is never changed. The edit starts from the newest revision (or the original); `basedOn` older
 * than that is a 409, so two operators never overwrite each other unknowingly. A JSON body that does not parse, an
 * invalid typed header value or an edit that changes nothing is a 422. Audited as `message.edited`, with the diff.
 */
export async function createRevision({ db: { sql }, id, input, actor, maxBodyBytes, ...scope }: CreateRevisionOptions): Promise<RevisionCreatedDto> {
  const messageId = parseId(id, 'message').toString()
  const sourceIds = allowedSourceIds(scope)
  return sql.transaction(async (tx) => {
    await lockMessageEdits({ sql: tx, id: messageId })
    const base = await loadEditBase({ sql: tx, id: messageId, sourceIds })
    if (!base) throw notFound(`message ${id}`)
    if (input.basedOn !== undefined && input.basedOn !== base.revision) {
      throw new AppError('conflict', `Message ${id} was edited meanwhile: revision ${base.revision} is the newest, this edit started from ${input.basedOn === 0 ? 'the original' : `revision ${input.basedOn}`}. Reload and edit again.`, { newest: base.revision })
    }
    const content = applyEdit(base.content, input, maxBodyBytes)
    const diff = diffContent(base.content, content)
    if (isEmptyDiff(diff)) throw new AppError('unprocessable', 'The edit changes nothing')
    const summary = describeDiff(diff)
    const [revision] = await insertRevisions({ sql: tx, revisions: [{ id: messageId, content, bodyEncoding: bodyEncodingOf(content.body), diff, summary, actor, bulkId: null }] })
    await recordAudit({
      sql: tx,
      actor,
      action: 'message.edited',
      subject: { type: 'message', id: messageId },
      summary: `Edited message ${messageId}: revision ${revision.revision} (${summary})`,
      details: { revision: revision.revision, basedOn: base.revision, diff },
      outcome: `revision ${revision.revision}`,
    })
    return { revision }
  })
}
