import 'server-only'
import { z } from 'zod'
import type { Db } from '@/lib/server/platform/db'
import { decodeKeysetCursor as decodeCursor } from '@/lib/server/platform/db/keyset-cursor'
import type { AuditEntryDto, AuditListDto, listAuditQuerySchema } from '@/lib/shared/schemas/audit'

export type ListAuditQuery = z.infer<typeof listAuditQuerySchema>

export type ListAuditOptions = { db: Db; query: ListAuditQuery }

type AuditRow = {
  id: string; at: Date; actor: string; action: AuditEntryDto['action']; subject_type: AuditEntryDto['subject']['type']
  subject_id: string | null; summary: string; details: Record<string, unknown>; outcome: string | null; request_id: string | null
}

function encodeCursor(row: AuditRow): string {
  return Buffer.from(`${new Date(row.at).toISOString()}|${row.id}`, 'utf8').toString('base64url')
}

export function toAuditEntryDto(row: AuditRow): AuditEntryDto {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    actor: row.actor,
    action: row.action,
    subject: { type: row.subject_type, id: row.subject_id },
    summary: row.summary,
    details: row.details ?? {},
    outcome: row.outcome,
    requestId: row.request_id,
  }
}

/** The audit log, newest first, keyset-paginated on (at, id). */
export async function listAudit({ db, query }: ListAuditOptions): Promise<AuditListDto> {
  const params: unknown[] = []
  const where: string[] = []
  const add = (clause: (p: string) => string, value: unknown) => {
    params.push(value)
    where.push(clause(`$${params.length}`))
  }
  if (query.action) add((p) => `action = ${p}`, query.action)
  if (query.subjectType) add((p) => `subject_type = ${p}`, query.subjectType)
  if (query.subjectId) add((p) => `subject_id = ${p}`, query.subjectId)
  if (query.cursor) {
    const cursor = decodeCursor(query.cursor)
    params.push(cursor.at, cursor.id)
    where.push(`(at, id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`)
  }
  params.push(query.limit + 1)
  const { rows } = await db.sql.query<AuditRow>(
    `SELECT id::text, at, actor, action, subject_type, subject_id, summary, details, outcome, request_id FROM audit_log
     WHERE ${where.length ? where.join(' AND ') : 'TRUE'} ORDER BY at DESC, id DESC LIMIT $${params.length}`,
    params,
  )
  const page = rows.slice(0, query.limit)
  return { entries: page.map(toAuditEntryDto), nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]) : null }
}
