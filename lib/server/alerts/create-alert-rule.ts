import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { AppError } from '@/lib/server/platform/errors/app-error'
import type { AlertRuleDto, CreateAlertRuleInput } from '@/lib/shared/schemas/alert'
import { insertAlertRule, rowExists, selectAlertRules } from './alerts-store'

export async function createAlertRule({ db, input, actor }: { db: Db; input: CreateAlertRuleInput; actor: string }): Promise<AlertRuleDto> {
  const sourceId = input.kind === 'source-rate' ? (input.sourceId ?? null) : null
  const groupId = input.kind === 'group-rate' ? (input.groupId ?? null) : null
  const rate = input.kind === 'new-group' || input.kind === 'new-finding' || input.kind === 'replay-halted' ? null : input
  return db.sql.transaction(async (sql) => {
    if (sourceId && !(await rowExists({ sql, table: 'sources', id: sourceId }))) throw new AppError('unprocessable', `source ${sourceId} does not exist`)
    if (groupId && !(await rowExists({ sql, table: 'error_groups', id: groupId }))) throw new AppError('unprocessable', `group ${groupId} does not exist`)
    const id = await insertAlertRule({
      sql,
      rule: {
        kind: input.kind,
        sourceId,
        groupId,
        thresholdPerMinute: rate?.thresholdPerMinute ?? null,
        minSeverity: input.kind === 'new-finding' ? input.minSeverity : null,
        windowMinutes: rate?.windowMinutes ?? 5,
        cooldownMinutes: rate?.cooldownMinutes ?? 30,
        createdBy: actor,
      },
    })
    const [created] = await selectAlertRules({ sql, id })
    await recordConfigChange({ sql, actor, action: 'alert-rule.created', subject: { type: 'alert-rule', id: created.id }, summary: `Added alert rule ${created.kind}`, before: null, after: created })
    return created
  })
}
