import 'server-only'
import { recordAudit, type AuditEntry } from '@/lib/server/audit/record-audit'
import type { Sql } from '@/lib/server/platform/db/sql'
import { currentRequestId } from '@/lib/server/platform/request-context'
import type { PauseDto } from '@/lib/shared/schemas/pause'

/**
 * Audit entries for many pauses in one statement (a replay can pause thousands of entities); a single entry goes
 * through the audit module's recordAudit. Same columns and caps as recordAudit, in the caller's transaction (`sql`).
 */
export async function recordAudits({ sql, entries }: { sql: Sql; entries: AuditEntry[] }): Promise<void> {
  if (entries.length === 0) return
  if (entries.length === 1) {
    await recordAudit({ sql, ...entries[0] })
    return
  }
  const column = <T>(pick: (e: AuditEntry) => T) => entries.map(pick)
  await sql.query(
    `INSERT INTO audit_log (actor, action, subject_type, subject_id, summary, details, outcome, request_id)
     SELECT *, $8::text FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[])`,
    [
      column((e) => e.actor), column((e) => e.action), column((e) => e.subject.type), column((e) => e.subject.id),
      column((e) => e.summary.slice(0, 2000)), column((e) => JSON.stringify(e.details ?? {})), column((e) => e.outcome ?? null),
      currentRequestId(),
    ],
  )
}

export type AuditPausesOptions = {
  sql: Sql
  pauses: PauseDto[]
  actor: string
  action: 'pause.created' | 'pause.resumed'
  /** The default summary is "<verb> <what was paused>", e.g. "Paused entity "42" on orders". */
  verb: 'Paused' | 'Resumed'
  summary?: (pause: PauseDto) => string
}

/** One audit entry per pause created or resumed, with what identifies it and the registry version it got. */
export async function auditPauses({ sql, pauses, actor, action, verb, summary }: AuditPausesOptions): Promise<void> {
  await recordAudits({
    sql,
    entries: pauses.map((pause) => ({
      actor,
      action,
      subject: { type: 'pause' as const, id: pause.id },
      summary: summary?.(pause) ?? `${verb} ${describePause(pause)}`,
      details: {
        queue: pause.queue, vhost: pause.vhost, entityKey: pause.entityKey,
        ...(action === 'pause.created' ? { reason: pause.reason } : {}),
        replayJobId: pause.replayJobId, version: pause.version,
      },
      outcome: action === 'pause.created' ? 'active' : 'resumed',
    })),
  })
}

export function describePause(pause: Pick<PauseDto, 'queue' | 'entityKey'>): string {
  return pause.entityKey === null ? `the whole queue ${pause.queue}` : `entity ${JSON.stringify(pause.entityKey.slice(0, 200))} on ${pause.queue}`
}
