import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getConfig } from '@/lib/server/platform/config'
import { getDb } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { MAX_WEBHOOKS, type UpdateWebhookSettingsInput, type WebhookSettingsDto } from '@/lib/shared/schemas/webhook-settings'
import { createWebhookPolicy, type Resolve, type WebhookPolicy } from './webhook-policy'

type SettingsRow = { allowed_hosts: string[]; updated_at: Date; updated_by: string | null }

async function readSettings(sql: Sql): Promise<SettingsRow | null> {
  const { rows } = await sql.query<SettingsRow>('SELECT allowed_hosts, updated_at, updated_by FROM webhook_settings WHERE id = 1')
  return rows[0] ?? null
}

const toDto = (row: SettingsRow | null): WebhookSettingsDto => ({
  allowedHosts: row?.allowed_hosts ?? [],
  environmentAllowedHosts: getConfig().LAZARUS_WEBHOOK_ALLOWED_HOSTS,
  maxWebhooks: MAX_WEBHOOKS,
  updatedAt: row ? new Date(row.updated_at).toISOString() : null,
  updatedBy: row?.updated_by ?? null,
})

/** GET /api/settings/webhooks */
export async function getWebhookSettings(): Promise<WebhookSettingsDto> {
  const { sql } = await getDb()
  return toDto(await readSettings(sql))
}

/** PUT /api/settings/webhooks: replaces the stored allow-list (entries arrive canonical from the schema). */
export async function updateWebhookSettings(input: UpdateWebhookSettingsInput, actor: string): Promise<WebhookSettingsDto> {
  const { sql } = await getDb()
  const before = (await readSettings(sql))?.allowed_hosts ?? []
  const { rows } = await sql.query<SettingsRow>(
    `INSERT INTO webhook_settings (id, allowed_hosts, updated_at, updated_by) VALUES (1, $1::text[], now(), $2)
     ON CONFLICT (id) DO UPDATE SET allowed_hosts = excluded.allowed_hosts, updated_at = excluded.updated_at, updated_by = excluded.updated_by
     RETURNING allowed_hosts, updated_at, updated_by`,
    [input.allowedHosts, actor],
  )
  await recordConfigChange({ sql: sql, actor, action: 'settings.updated', subject: { type: 'settings', id: 'webhook-hosts' }, summary: 'Changed the webhook host allow-list', before: { allowedHosts: before }, after: { allowedHosts: rows[0].allowed_hosts } })
  return toDto(rows[0])
}

/**
 * The address policy as it stands now: the stored allow-list plus LAZARUS_WEBHOOK_ALLOWED_HOSTS. Read for every save
 * and every delivery round, so an allow-list edit applies to the next attempt in every process.
 */
export async function loadWebhookPolicy(sql: Sql, resolve?: Resolve): Promise<WebhookPolicy> {
  const stored = (await readSettings(sql))?.allowed_hosts ?? []
  return createWebhookPolicy({ allowedHosts: [...stored, ...getConfig().LAZARUS_WEBHOOK_ALLOWED_HOSTS], resolve })
}
