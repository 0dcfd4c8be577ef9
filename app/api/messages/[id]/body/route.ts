import { route } from '@/lib/server/platform/http/handle-route'
import { getMessageBody } from '@/lib/server/messages/get-message-body'
import { recordRawView } from '@/lib/server/messages/record-raw-view'

// GET /api/messages/{id}/body – the raw body, byte for byte (operators, audited); always a download, never rendered
export const GET = route<{ id: string }>({ permission: 'messages:raw' }, async ({ db, actor, sourceIds, params: { id } }) => {
  const body = await getMessageBody({ db, id, sourceIds: await sourceIds() })
  await recordRawView({ db, actor, messageId: id, what: 'body' })
  return new Response(new Uint8Array(body.bytes), {
    headers: {
      'content-type': body.safeContentType,
      'content-disposition': `attachment; filename="message-${id}.${body.encoding === 'json' ? 'json' : body.encoding === 'text' ? 'txt' : 'bin'}"`,
      'x-content-type-options': 'nosniff',
      'x-original-content-type': body.contentTypeHeader ?? '',
      ...(body.contentEncodingHeader ? { 'x-original-content-encoding': body.contentEncodingHeader } : {}),
      'content-security-policy': "default-src 'none'; sandbox",
      'cache-control': 'private, no-store',
    },
  })
})

