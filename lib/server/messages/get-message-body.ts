import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { allowedSourceIds, type SourceScope } from '@/lib/server/sources/source-scope'

export type MessageBody = {
  bytes: Buffer
  contentType: string | null
  contentEncoding: string | null
  encoding: string
  /** The message's own content type unless a browser could render or execute it (then octet-stream). */
  safeContentType: string
  /** contentType and contentEncoding as HTTP header values (see headerValue); null when the message had none. */
  contentTypeHeader: string | null
  contentEncodingHeader: string | null
}

const MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+/
/** Printable ASCII: what a header value may hold without being refused or read differently along the way. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/**
 * The Content-Type the download is served with. The stored one is whatever the publisher put in the AMQP property:
 * CR, LF or a character above U+00FF there made the Response constructor throw, so the body could not be downloaded
 * at all. What follows the media type stays only if it is parameters in printable ASCII; no media type: octet-stream.
 */
function safeContentType(contentType: string | null): string {
  const mediaType = contentType ? MEDIA_TYPE.exec(contentType)?.[0] : undefined
  if (!contentType || !mediaType || /html|xml|svg|script/i.test(contentType)) return 'application/octet-stream'
  const rest = contentType.slice(mediaType.length)
  return /^[ \t]*;/.test(rest) && PRINTABLE_ASCII.test(rest) ? contentType : mediaType
}

/**
 * A stored string as a header value that keeps all of it: printable ASCII as it is, anything else as an RFC 8187
 * ext-value (`UTF-8''text%2Fplain%0D%0A…`, the encoding of `filename*`), which a client decodes unambiguously.
 */
export function headerValue(value: string): string {
  if (PRINTABLE_ASCII.test(value)) return value
  const encoded = [...Buffer.from(value, 'utf8')]
    .map((byte) => (/[A-Za-z0-9!#$&+.^_`|~-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('')
  return `UTF-8''${encoded}`
}

export type GetMessageBodyOptions = { db: Db; id: string } & SourceScope

/**
 * The stored body, byte for byte, with the content type and encoding the message was published with. With
 * `sourceIds`, a message of another source is not found.
 */
export async function getMessageBody({ db: { sql }, id, ...scope }: GetMessageBodyOptions): Promise<MessageBody> {
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
    contentTypeHeader: row.content_type === null ? null : headerValue(row.content_type),
    contentEncodingHeader: row.content_encoding === null ? null : headerValue(row.content_encoding),
  }
}
