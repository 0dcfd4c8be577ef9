import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { webhookOrigin } from './alert-dto'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { AlertWebhookDto } from '@/lib/shared/schemas/alert'
import { MAX_WEBHOOKS } from '@/lib/shared/schemas/webhook-settings'
import { loadWebhookPolicy } from './webhook-settings'

/**
 * Adds a webhook. Its host is checked now (resolved, against the address policy and allow-list) so an operator learns
 * at once that a URL cannot work; delivery checks again on every connection, because DNS answers change.
 */
export async function createWebhook({ url, actor }: { url: string; actor: string }): Promise<AlertWebhookDto> {
  const { sql } = await getDb()
  const refusal = await (await loadWebhookPolicy(sql)).check(url)
  if (refusal) throw new AppError('unprocessable', `webhook URL refused: ${refusal.replace(/^refused: /, '')}`)
  const row = await sql.transaction(async (tx) => {
    // Self-conflicting lock: two concurrent adds cannot both see room for one more.
    await tx.query('LOCK TABLE alert_webhooks IN SHARE ROW EXCLUSIVE MODE')
    const { rows: count } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM alert_webhooks')
    if (count[0].n >= MAX_WEBHOOKS) {
      throw new AppError('conflict', `at most ${MAX_WEBHOOKS} webhooks can be configured; remove one before adding another`)
    }
    const { rows } = await tx.query<{ id: string; url: string; enabled: boolean; created_at: Date }>(
      'INSERT INTO alert_webhooks (url) VALUES ($1) RETURNING id::text, url, enabled, created_at',
      [url],
    )
    // The audit log is read by operators too: it names the webhook's origin, not its URL (a Slack URL is a credential).
    await recordConfigChange({ sql: tx, actor, action: 'webhook.created', subject: { type: 'webhook', id: rows[0].id }, summary: `Added webhook ${webhookOrigin(url)}`, before: null, after: { url: webhookOrigin(url) } })
    return rows[0]
  })
  return { id: row.id, url: row.url, enabled: row.enabled, createdAt: new Date(row.created_at).toISOString() }
}
