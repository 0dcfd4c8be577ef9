import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { webhookOrigin } from './alert-dto'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'

export async function deleteWebhook({ id, actor }: { id: string; actor: string }): Promise<void> {
  const { sql } = await getDb()
  const { rows } = await sql.query<{ url: string }>('DELETE FROM alert_webhooks WHERE id = $1::bigint RETURNING url', [parseId(id, 'webhook').toString()])
  if (rows.length === 0) throw notFound(`webhook ${id}`)
  await recordConfigChange({ sql: sql, actor, action: 'webhook.deleted', subject: { type: 'webhook', id }, summary: `Removed webhook ${webhookOrigin(rows[0].url)}`, before: { url: webhookOrigin(rows[0].url) }, after: null })
}
