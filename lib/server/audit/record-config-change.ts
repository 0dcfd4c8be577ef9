import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import type { AuditEntryDto } from '@/lib/shared/schemas/audit'
import { recordAudit } from './record-audit'

export type ConfigChange = {
  actor: string
  action: AuditEntryDto['action']
  subject: AuditEntryDto['subject']
  summary: string
  /** The object as it was (null: created) and as it is (null: deleted), as the API shows it. */
  before: unknown
  after: unknown
}

/**
 * Every change of configuration is audited with before and after (docs/security.md, "Where the rules live"), in the
 * change's transaction (`sql`), so the entry commits with it.
 */
export function recordConfigChange({ sql, ...change }: ConfigChange & { sql: Sql }): Promise<string> {
  return recordAudit({
    sql,
    actor: change.actor,
    action: change.action,
    subject: change.subject,
    summary: change.summary,
    details: { before: change.before ?? null, after: change.after ?? null },
  })
}
