import { z } from 'zod'

/** From this many messages a replay needs its count typed (the UI) or sent as confirmCount (the API), unless an admin changes it. */
export const DEFAULT_LARGE_JOB_MESSAGES = 100
export const MAX_LARGE_JOB_MESSAGES = 10_000_000

// PUT /api/settings/replay-confirm
export const updateReplayConfirmSettingsSchema = z
  .object({
    largeJobMessages: z.number().int().min(1).max(MAX_LARGE_JOB_MESSAGES),
    /** From this many messages the plan stages a replay by default (canary, window, ramps); absent: unchanged. */
    stagedFromMessages: z.number().int().min(1).max(MAX_LARGE_JOB_MESSAGES).optional(),
  })
  .strict()
export type UpdateReplayConfirmSettingsInput = z.infer<typeof updateReplayConfirmSettingsSchema>

/** GET /api/settings/replay-confirm (and the answer to PUT). */
export type ReplayConfirmSettingsDto = {
  /** A replay of at least this many messages needs its count confirmed. */
  largeJobMessages: number
  /** A replay of at least this many messages is staged by default (canary, observation window, ramps). */
  stagedFromMessages: number
  /** Null while the default applies (never saved). */
  updatedAt: string | null
  updatedBy: string | null
}
