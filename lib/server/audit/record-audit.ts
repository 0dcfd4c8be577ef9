import 'server-only'
import type { Sql } from '@/lib/server/db/sql'
import type { AuditEntryDto } from '@/lib/shared/schemas/audit'

export type RecordAuditOptions = {
  actor: string
  action: AuditEntryDto['action']
  subject: AuditEntryDto['subject']
  summary: string
  details?: Record<string, unknown>
  outcome?: string | null
}

/**
 * Appends one audit entry. Pass the caller's transaction so the entry commits (or rolls back) with the change it
 * describes.
 */
export async function recordAudit(tx: Sql, entry: RecordAuditOptions): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO audit_log (actor, action, subject_type, subject_id, summary, details, outcome)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) RETURNING id::text`,
    [entry.actor, entry.action, entry.subject.type, entry.subject.id, entry.summary.slice(0, 2000), JSON.stringify(entry.details ?? {}), entry.outcome ?? null],
  )
  return rows[0].id
}
