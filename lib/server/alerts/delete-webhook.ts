import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { webhookOrigin } from './alert-dto'
import { deleteWebhookRow } from './alerts-store'

export async function deleteWebhook({ db, id, actor }: { db: Db; id: string; actor: string }): Promise<void> {
  await db.sql.transaction(async (sql) => {
    const url = await deleteWebhookRow({ sql, id: parseId(id, 'webhook').toString() })
    if (url === null) throw notFound(`webhook ${id}`)
    await recordConfigChange({ sql, actor, action: 'webhook.deleted', subject: { type: 'webhook', id }, summary: `Removed webhook ${webhookOrigin(url)}`, before: { url: webhookOrigin(url) }, after: null })
  })
}
