import 'server-only'
import type { Db } from '@/lib/server/platform/db'
import type { AlertsOverviewDto } from '@/lib/shared/schemas/alert'
import { toAlertEventDto, visibleDelivery, webhookOrigin, type DeliveryErrorVisibility } from './alert-dto'
import { selectAlertRules, selectFiringEvents, selectWebhooks } from './alerts-store'

export type ListAlertsOptions = { db: Db } & DeliveryErrorVisibility

/**
 * What is firing now (for the banner), the rules and the webhooks. Failed deliveries of the firing events come without
 * their status and error, and webhooks without their path, unless `includeDeliveryErrors` (admins only).
 */
export async function listAlerts({ db: { sql }, ...visibility }: ListAlertsOptions): Promise<AlertsOverviewDto> {
  const [firing, rules, webhooks] = await Promise.all([selectFiringEvents({ sql }), selectAlertRules({ sql }), selectWebhooks({ sql })])
  return {
    firing: firing.map((row) => visibleDelivery(toAlertEventDto(row), visibility)),
    rules,
    webhooks: webhooks.map((h) => (visibility.includeDeliveryErrors ? h : { ...h, url: webhookOrigin(h.url) })),
  }
}
