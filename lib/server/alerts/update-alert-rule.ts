import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import type { AlertRuleDto } from '@/lib/shared/schemas/alert'
import { selectAlertRules, setAlertRuleEnabled } from './alerts-store'

/** Enables or disables a rule; disabling clears its breach state, so re-enabling starts from a clean slate. */
export async function updateAlertRule({ db, id, enabled, actor }: { db: Db; id: string; enabled: boolean; actor: string }): Promise<AlertRuleDto> {
  const ruleId = parseId(id, 'alert rule').toString()
  return db.sql.transaction(async (sql) => {
    const [before = null] = await selectAlertRules({ sql, id: ruleId })
    if (!(await setAlertRuleEnabled({ sql, id: ruleId, enabled }))) throw notFound(`alert rule ${id}`)
    const [rule] = await selectAlertRules({ sql, id: ruleId })
    await recordConfigChange({ sql, actor, action: 'alert-rule.updated', subject: { type: 'alert-rule', id: ruleId }, summary: `${enabled ? 'Enabled' : 'Disabled'} alert rule ${rule.kind}`, before, after: rule })
    return rule
  })
}
