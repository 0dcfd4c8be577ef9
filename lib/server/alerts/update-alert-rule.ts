import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { AlertRuleDto } from '@/lib/shared/schemas/alert'
import { listAlerts } from './list-alerts'

/** Enables or disables a rule; disabling clears its breach state, so re-enabling starts from a clean slate. */
export async function updateAlertRule({ id, enabled, actor }: { id: string; enabled: boolean; actor: string }): Promise<AlertRuleDto> {
  const { sql } = await getDb()
  const ruleId = parseId(id, 'alert rule').toString()
  const before = (await listAlerts()).rules.find((r) => r.id === ruleId) ?? null
  const { rowCount } = await sql.query('UPDATE alert_rules SET enabled = $2 WHERE id = $1::bigint', [ruleId, enabled])
  if (rowCount === 0) throw notFound(`alert rule ${id}`)
  if (!enabled) await sql.query('DELETE FROM alert_states WHERE rule_id = $1::bigint', [ruleId])
  const rule = (await listAlerts()).rules.find((r) => r.id === ruleId)
  if (!rule) throw notFound(`alert rule ${id}`)
  await recordConfigChange({ sql: sql, actor, action: 'alert-rule.updated', subject: { type: 'alert-rule', id: ruleId }, summary: `${enabled ? 'Enabled' : 'Disabled'} alert rule ${rule.kind}`, before, after: rule })
  return rule
}
