import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { listAlerts } from './list-alerts'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'

/** Deletes a rule; its history stays (rule_id becomes NULL). */
export async function deleteAlertRule({ id, actor }: { id: string; actor: string }): Promise<void> {
  const { sql } = await getDb()
  const ruleId = parseId(id, 'alert rule').toString()
  const before = (await listAlerts()).rules.find((r) => r.id === ruleId) ?? null
  const { rowCount } = await sql.query('DELETE FROM alert_rules WHERE id = $1::bigint', [ruleId])
  if (rowCount === 0) throw notFound(`alert rule ${id}`)
  await recordConfigChange({ sql: sql, actor, action: 'alert-rule.deleted', subject: { type: 'alert-rule', id: ruleId }, summary: `Removed alert rule ${before?.kind ?? ruleId}`, before, after: null })
}
