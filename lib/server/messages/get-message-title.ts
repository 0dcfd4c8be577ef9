import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'
import { shortErrorName } from '@/lib/shared/error-name'
import { pageIdSchema } from '@/lib/shared/page-params'

export type GetMessageTitleOptions = { db: Db; id: string } & SourceScope

/**
 * What a message's browser tab is called: "Message #1042 · StockException · #249", naming its error and group so a
 * row of tabs tells them apart; "Message #1042" alone for a message the caller cannot see or that does not exist.
 */
export async function getMessageTitle({ db: { sql }, id, ...scope }: GetMessageTitleOptions): Promise<string> {
  const messageId = pageIdSchema.safeParse(id)
  if (!messageId.success) return 'Message'
  const sourceIds = allowedSourceIds(scope)
  const { rows } = await sql.query<{ error_type: string | null; group_id: string; title: string }>(
    `SELECT d.error_type, d.group_id::text, g.title FROM dead_letters d JOIN error_groups g ON g.id = d.group_id
     WHERE d.id = $1::bigint${sourceIds ? ' AND d.source_id = ANY($2::bigint[])' : ''}`,
    sourceIds ? [messageId.data, sourceIds] : [messageId.data],
  )
  const [message] = rows
  if (!message) return `Message #${messageId.data}`
  return `Message #${messageId.data} · ${shortErrorName(message.error_type, message.title)} · #${message.group_id}`
}
