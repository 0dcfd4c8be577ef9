import 'server-only'
import { getDb } from '@/lib/server/db'
import type { AlertWebhookDto } from '@/lib/shared/schemas/alert'

export async function createWebhook({ url }: { url: string }): Promise<AlertWebhookDto> {
  const { sql } = await getDb()
  const { rows } = await sql.query<{ id: string; url: string; enabled: boolean; created_at: Date }>(
    'INSERT INTO alert_webhooks (url) VALUES ($1) RETURNING id::text, url, enabled, created_at',
    [url],
  )
  const row = rows[0]
  return { id: row.id, url: row.url, enabled: row.enabled, createdAt: new Date(row.created_at).toISOString() }
}
