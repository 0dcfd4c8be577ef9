import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import type { MessageRevisionsDto } from '@/lib/shared/schemas/revision'
import { bodyEncodingOf } from './revision-content'
import { listRevisionRows, loadEditBase, openReplayRevisions } from './revisions-store'

/** The revision list stops here; a message edited more often shows its newest. */
const MAX_REVISIONS = 100

export type ListRevisionsOptions = { db: Db; id: string } & SourceScope

/**
 * GET /api/messages/{id}/revisions: the revisions (newest first, each with its diff against the one before), the
 * newest one's whole message for the editor, and which revision each open replay of the message froze.
 */
export async function listRevisions({ db: { sql }, id, ...scope }: ListRevisionsOptions): Promise<MessageRevisionsDto> {
  const messageId = parseId(id, 'message').toString()
  const base = await loadEditBase({ sql, id: messageId, sourceIds: allowedSourceIds(scope) })
  if (!base) throw notFound(`message ${id}`)
  const [revisions, pendingReplays] = await Promise.all([listRevisionRows({ sql, id: messageId, limit: MAX_REVISIONS }), openReplayRevisions({ sql, id: messageId })])
  const { content } = base
  const encoding = bodyEncodingOf(content.body)
  return {
    revisions,
    latest:
      base.revision === 0
        ? null
        : {
            revision: base.revision,
            body: { encoding, size: content.body.length, base64: content.body.toString('base64'), text: encoding === 'binary' ? null : content.body.toString('utf8') },
            headersTyped: content.headers,
            properties: content.properties,
          },
    pendingReplays,
  }
}
