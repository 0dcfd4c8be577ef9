import { z } from 'zod'
import { text } from './fields'

/** The longest an admin may let a replay wait for approval: 30 days. */
export const MAX_APPROVAL_TTL_SECONDS = 30 * 24 * 3600

// PUT /api/settings/replay-approval
export const updateReplayApprovalSettingsSchema = z
  .object({
    /** Replays publishing more than this many messages need approval; null: no size rule. */
    aboveMessages: z.number().int().min(0).max(100_000_000).nullable(),
    editedMessages: z.boolean(),
    customTarget: z.boolean(),
    criticalSources: z.boolean(),
    /** How long a job waits for approval; null: LAZARUS_REPLAY_APPROVAL_TTL_H. */
    ttlSeconds: z.number().int().min(1).max(MAX_APPROVAL_TTL_SECONDS).nullable(),
  })
  .strict()
export type UpdateReplayApprovalSettingsInput = z.infer<typeof updateReplayApprovalSettingsSchema>

/** GET /api/settings/replay-approval (and the answer to PUT). Off (nothing needs approval) until an admin saves it. */
export type ReplayApprovalSettingsDto = UpdateReplayApprovalSettingsInput & {
  /** The TTL in force: ttlSeconds, else the environment's. */
  effectiveTtlSeconds: number
  updatedAt: string | null
  updatedBy: string | null
}

/** POST /api/replays/{id}/approve and /reject: the comment is required. */
export const replayDecisionSchema = z.object({ comment: text().trim().min(1, 'a comment is required').max(2000) }).strict()
export type ReplayDecisionInput = z.infer<typeof replayDecisionSchema>
