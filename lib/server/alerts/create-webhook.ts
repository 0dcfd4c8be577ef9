import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { AlertWebhookDto, CreateWebhookInput } from '@/lib/shared/schemas/alert'
import { MAX_WEBHOOKS } from '@/lib/shared/schemas/webhook-settings'
import { webhookOrigin } from './alert-dto'
import { insertWebhookWithin } from './alerts-store'
import { loadWebhookPolicy } from './webhook-settings'

/**
 * Adds a webhook. Its host is checked now (resolved, against the address policy and allow-list) so an operator learns
 * at once that a URL cannot work; delivery checks again on every connection, because DNS answers change.
 */
export type CreateWebhookOptions = { db: Db; actor: string } & CreateWebhookInput

export async function createWebhook({ db, url, format, routingKey, actor }: CreateWebhookOptions): Promise<AlertWebhookDto> {
  const refusal = await (await loadWebhookPolicy({ sql: db.sql })).check(url)
  if (refusal) throw new AppError('unprocessable', `webhook URL refused: ${refusal.replace(/^refused: /, '')}`)
  return db.sql.transaction(async (sql) => {
    const webhook = await insertWebhookWithin({ sql, url, format, routingKey, max: MAX_WEBHOOKS })
    if (!webhook) throw new AppError('conflict', `at most ${MAX_WEBHOOKS} webhooks can be configured; remove one before adding another`)
    // The audit log is read by operators too: it names the webhook's origin, not its URL (a Slack URL is a credential),
    // and never the routing key.
    await recordConfigChange({ sql, actor, action: 'webhook.created', subject: { type: 'webhook', id: webhook.id }, summary: `Added ${format} webhook ${webhookOrigin(url)}`, before: null, after: { url: webhookOrigin(url), format } })
    return webhook
  })
}
