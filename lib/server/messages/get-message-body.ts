import 'server-only'
import { getDb } from '@/lib/server/db'
import { notFound } from '@/lib/server/errors/app-error'
import { parseId } from '@/lib/server/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'

export type MessageBody = {
  bytes: Buffer
  contentType: string | null
  contentEncoding: string | null
  encoding: string
  /** The message's own content type unless a browser could render or execute it (then octet-stream). */
  safeContentType: string
}

function safeContentType(contentType: string | null): string {
  if (!contentType || !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(contentType) || /html|xml|svg|script/i.test(contentType)) return 'application/octet-stream'
  return contentType
}

export type GetMessageBodyOptions = { id: string } & SourceScope

/**
 * The stored body, byte for byte, with the content type and encoding the message was published with. With
 * `sourceIds`, a message of another source is not found.
 */
export async function getMessageBody({ id, ...scope }: GetMessageBodyOptions): Promise<MessageBody> {
  const { sql } = await getDb()
  const messageId = parseId(id, 'message')
  const sourceIds = allowedSourceIds(scope)
  const { rows } = await sql.query<{ body: Uint8Array; content_type: string | null; content_encoding: string | null; body_encoding: string }>(
    `SELECT body, properties->>'contentType' AS content_type, properties->>'contentEncoding' AS content_encoding, body_encoding
     FROM dead_letters WHERE id = $1::bigint${sourceIds ? ' AND source_id = ANY($2::bigint[])' : ''}`,
    sourceIds ? [messageId.toString(), sourceIds] : [messageId.toString()],
  )
  if (!rows[0]) throw notFound(`message ${id}`)
  const row = rows[0]
  return {
    bytes: Buffer.from(row.body),
    contentType: row.content_type,
    contentEncoding: row.content_encoding,
    encoding: row.body_encoding,
    safeContentType: safeContentType(row.content_type),
  }
}
