import 'server-only'
import { recordConfigChange } from '@/lib/server/audit/record-config-change'
import type { Db } from '@/lib/server/platform/db'
import { notFound } from '@/lib/server/platform/errors/app-error'
import { parseId } from '@/lib/server/platform/http/parse-id'
import { deleteAlertRuleRow, selectAlertRules } from './alerts-store'

/** Deletes a rule; its history stays (rule_id becomes NULL). */
export async function deleteAlertRule({ db, id, actor }: { db: Db; id: string; actor: string }): Promise<void> {
  const ruleId = parseId(id, 'alert rule').toString()
  await db.sql.transaction(async (sql) => {
    const [before = null] = await selectAlertRules({ sql, id: ruleId })
    if (!(await deleteAlertRuleRow({ sql, id: ruleId }))) throw notFound(`alert rule ${id}`)
    await recordConfigChange({ sql, actor, action: 'alert-rule.deleted', subject: { type: 'alert-rule', id: ruleId }, summary: `Removed alert rule ${before?.kind ?? ruleId}`, before, after: null })
  })
}
