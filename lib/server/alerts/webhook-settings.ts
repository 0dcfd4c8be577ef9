import 'server-only'
import { getConfig } from '@/lib/server/platform/config'
import type { Db } from '@/lib/server/platform/db'
import type { Sql } from '@/lib/server/platform/db/sql'
import { readAllowList, replaceAllowList, type StoredAllowList } from '@/lib/server/settings/settings-store'
import { MAX_WEBHOOKS, type UpdateWebhookSettingsInput, type WebhookSettingsDto } from '@/lib/shared/schemas/webhook-settings'
import { createWebhookPolicy, type Resolve, type WebhookPolicy } from './webhook-policy'

const toDto = (stored: StoredAllowList | null): WebhookSettingsDto => ({
  allowedHosts: stored?.entries ?? [],
  environmentAllowedHosts: getConfig().LAZARUS_WEBHOOK_ALLOWED_HOSTS,
  maxWebhooks: MAX_WEBHOOKS,
  updatedAt: stored?.updatedAt.toISOString() ?? null,
  updatedBy: stored?.updatedBy ?? null,
})

/** GET /api/settings/webhooks */
export async function getWebhookSettings({ db }: { db: Db }): Promise<WebhookSettingsDto> {
  return toDto(await readAllowList({ prisma: db.prisma, setting: 'webhook-hosts' }))
}

export type UpdateWebhookSettingsOptions = { db: Db; input: UpdateWebhookSettingsInput; actor: string }

/** PUT /api/settings/webhooks: replaces the stored allow-list (entries arrive canonical from the schema). */
export async function updateWebhookSettings({ db, input, actor }: UpdateWebhookSettingsOptions): Promise<WebhookSettingsDto> {
  return toDto(
    await replaceAllowList({ db, setting: 'webhook-hosts', entries: input.allowedHosts, actor, summary: 'Changed the webhook host allow-list', field: 'allowedHosts' }),
  )
}

/**
 * The address policy as it stands now: the stored allow-list plus LAZARUS_WEBHOOK_ALLOWED_HOSTS. Read for every save
 * and every delivery round, so an allow-list edit applies to the next attempt in every process. SQL on the caller's
 * connection: the alert engine delivers on the background pool, which has no Prisma client.
 */
export async function loadWebhookPolicy({ sql, resolve }: { sql: Sql; resolve?: Resolve }): Promise<WebhookPolicy> {
  const { rows } = await sql.query<{ allowed_hosts: string[] }>('SELECT allowed_hosts FROM webhook_settings WHERE id = 1')
  return createWebhookPolicy({ allowedHosts: [...(rows[0]?.allowed_hosts ?? []), ...getConfig().LAZARUS_WEBHOOK_ALLOWED_HOSTS], resolve })
}
