import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { currentRequestId } from '@/lib/server/platform/request-context'
import type { AuditEntryDto } from '@/lib/shared/schemas/audit'

export type AuditEntry = {
  actor: string
  action: AuditEntryDto['action']
  subject: AuditEntryDto['subject']
  summary: string
  details?: Record<string, unknown>
  outcome?: string | null
}

/** `sql`: the transaction of the change the entry describes, so the entry commits (or rolls back) with it. */
export type RecordAuditOptions = AuditEntry & { sql: Sql }

/**
 * Appends one audit entry, in the caller's transaction. Written while serving a request, the entry carries the
 * request's id, as its log lines do.
 */
export async function recordAudit({ sql, ...entry }: RecordAuditOptions): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO audit_log (actor, action, subject_type, subject_id, summary, details, outcome, request_id)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) RETURNING id::text`,
    [entry.actor, entry.action, entry.subject.type, entry.subject.id, entry.summary.slice(0, 2000), JSON.stringify(entry.details ?? {}), entry.outcome ?? null, currentRequestId()],
  )
  return rows[0].id
}
