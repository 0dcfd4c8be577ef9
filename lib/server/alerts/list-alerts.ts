import 'server-only'
import { getDb } from '@/lib/server/platform/db'
import type { AlertsOverviewDto, AlertRuleDto } from '@/lib/shared/schemas/alert'
import { alertEventColumns, toAlertEventDto, visibleDelivery, webhookOrigin, type AlertEventRow, type DeliveryErrorVisibility } from './alert-dto'

type RuleRow = {
  id: string; kind: AlertRuleDto['kind']; source_id: string | null; queue: string | null; group_id: string | null; title: string | null
  threshold: number | null; window_minutes: number; cooldown_minutes: number; enabled: boolean; created_by: string; created_at: Date; firing: number
}

/**
 * What is firing now (for the banner), the rules and the webhooks. Failed deliveries of the firing events come without
 * their status and error unless `includeDeliveryErrors` (admins only).
 */
export async function listAlerts(visibility: DeliveryErrorVisibility = {}): Promise<AlertsOverviewDto> {
  const { sql } = await getDb()
  const [firing, rules, hooks] = await Promise.all([
    // The latest breach event of every subject that is still in breach.
    sql.query<AlertEventRow>(
      `SELECT ${alertEventColumns('e')}
       FROM alert_states st
       JOIN LATERAL (
         SELECT * FROM alert_events e WHERE e.rule_id = st.rule_id AND e.state = 'firing'
           AND e.subject_type || ':' || e.subject_id = st.subject_key ORDER BY e.id DESC LIMIT 1
       ) e ON true
       WHERE st.firing ORDER BY e.at DESC`,
    ),
    sql.query<RuleRow>(
      `SELECT r.id::text, r.kind, r.source_id::text, s.queue, r.group_id::text, g.title, r.threshold_per_minute::float8 AS threshold,
         r.window_minutes, r.cooldown_minutes, r.enabled, r.created_by, r.created_at,
         (SELECT count(*) FROM alert_states st WHERE st.rule_id = r.id AND st.firing)::int AS firing
       FROM alert_rules r LEFT JOIN sources s ON s.id = r.source_id LEFT JOIN error_groups g ON g.id = r.group_id ORDER BY r.id`,
    ),
    sql.query<{ id: string; url: string; enabled: boolean; created_at: Date }>('SELECT id::text, url, enabled, created_at FROM alert_webhooks ORDER BY id'),
  ])
  return {
    firing: firing.rows.map((row) => visibleDelivery(toAlertEventDto(row), visibility)),
    rules: rules.rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      source: r.source_id ? { id: r.source_id, queue: r.queue ?? '' } : null,
      group: r.group_id ? { id: r.group_id, title: r.title ?? '' } : null,
      thresholdPerMinute: r.threshold,
      windowMinutes: r.window_minutes,
      cooldownMinutes: r.cooldown_minutes,
      enabled: r.enabled,
      createdBy: r.created_by,
      createdAt: new Date(r.created_at).toISOString(),
      firing: r.firing,
    })),
    webhooks: hooks.rows.map((h) => ({ id: h.id, url: visibility.includeDeliveryErrors ? h.url : webhookOrigin(h.url), enabled: h.enabled, createdAt: new Date(h.created_at).toISOString() })),
  }
}
