import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import { getDb } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { AlertRuleDto, CreateAlertRuleInput } from '@/lib/shared/schemas/alert'
import { listAlerts } from './list-alerts'

export async function createAlertRule({ input, actor }: { input: CreateAlertRuleInput; actor: string }): Promise<AlertRuleDto> {
  const { sql } = await getDb()
  const sourceId = input.kind === 'source-rate' ? (input.sourceId ?? null) : null
  const groupId = input.kind === 'group-rate' ? (input.groupId ?? null) : null
  if (sourceId) {
    const { rows } = await sql.query('SELECT 1 FROM sources WHERE id = $1::bigint', [sourceId])
    if (rows.length === 0) throw new AppError('unprocessable', `source ${sourceId} does not exist`)
  }
  if (groupId) {
    const { rows } = await sql.query('SELECT 1 FROM error_groups WHERE id = $1::bigint', [groupId])
    if (rows.length === 0) throw new AppError('unprocessable', `group ${groupId} does not exist`)
  }
  const rate = input.kind === 'new-group' ? null : input
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO alert_rules (kind, source_id, group_id, threshold_per_minute, window_minutes, cooldown_minutes, created_by)
     VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6, $7) RETURNING id::text`,
    [input.kind, sourceId, groupId, rate?.thresholdPerMinute ?? null, rate?.windowMinutes ?? 5, rate?.cooldownMinutes ?? 30, actor],
  )
  const created = (await listAlerts()).rules.find((r) => r.id === rows[0].id)
  if (!created) throw new AppError('conflict', 'the rule was deleted while it was being created')
  await recordConfigChange({ sql: sql, actor, action: 'alert-rule.created', subject: { type: 'alert-rule', id: created.id }, summary: `Added alert rule ${created.kind}`, before: null, after: created })
  return created
}
