import { z } from 'zod'
import { text } from './fields'

export const AUDIT_ACTIONS = [
  'replay.created',
  'replay.cancelled',
  'replay.finished',
  'replay.halted',
  'replay.resumed',
  'replay.halt-timed-out',
  // Four eyes and scheduling (docs/security.md#four-eyes)
  'replay.approval-requested',
  'replay.approved',
  'replay.rejected',
  'replay.expired',
  'replay.started',
  'messages.resolved',
  'messages.restored',
  'messages.superseded',
  'replay.item-superseded',
  'message.raw-viewed',
  // Edit and replay: a revision of one message (details hold the diff), a bulk edit of a selection
  'message.edited',
  'messages.bulk-edited',
  'pause.created',
  'pause.resumed',
  'group.updated',
  'topology.finding-acknowledged',
  // The three-tier builder declared objects on the broker (docs/topology.md)
  'topology.applied',
  // Configuration (docs/security.md: every change with before and after)
  'source.created',
  'source.updated',
  'source.deleted',
  'settings.updated',
  'alert-rule.created',
  'alert-rule.updated',
  'alert-rule.deleted',
  'webhook.created',
  'webhook.deleted',
  'user.created',
  'user.updated',
  'token.created',
  'token.revoked',
  // Sign-in
  'auth.signed-in',
  'auth.sign-in-failed',
  'auth.signed-out',
] as const

export const AUDIT_SUBJECT_TYPES = ['replay', 'message', 'group', 'pause', 'source', 'settings', 'alert-rule', 'webhook', 'user', 'token', 'topology-finding', 'vhost'] as const

export const listAuditQuerySchema = z
  .object({
    action: z.enum(AUDIT_ACTIONS).optional(),
    subjectType: z.enum(AUDIT_SUBJECT_TYPES).optional(),
    subjectId: text().max(64).optional(),
    cursor: text().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict()

export type AuditEntryDto = {
  id: string
  at: string
  actor: string
  action: (typeof AUDIT_ACTIONS)[number]
  subject: { type: (typeof AUDIT_SUBJECT_TYPES)[number]; id: string | null }
  summary: string
  details: Record<string, unknown>
  outcome: string | null
  /** The API request that wrote it (its `X-Request-Id`, on its log lines too); null for engines and older entries. */
  requestId: string | null
}

/** GET /api/audit */
export type AuditListDto = { entries: AuditEntryDto[]; nextCursor: string | null }
