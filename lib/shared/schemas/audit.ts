import { z } from 'zod'

export const AUDIT_ACTIONS = ['replay.created', 'replay.cancelled', 'replay.finished', 'messages.resolved', 'pause.created', 'pause.resumed', 'group.updated'] as const

export const listAuditQuerySchema = z
  .object({
    action: z.enum(AUDIT_ACTIONS).optional(),
    subjectType: z.enum(['replay', 'message', 'group', 'pause']).optional(),
    subjectId: z.string().max(64).optional(),
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict()

export type AuditEntryDto = {
  id: string
  at: string
  actor: string
  action: (typeof AUDIT_ACTIONS)[number]
  subject: { type: 'replay' | 'message' | 'group' | 'pause'; id: string | null }
  summary: string
  details: Record<string, unknown>
  outcome: string | null
}

/** GET /api/audit */
export type AuditListDto = { entries: AuditEntryDto[]; nextCursor: string | null }
