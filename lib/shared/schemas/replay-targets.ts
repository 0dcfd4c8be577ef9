import { z } from 'zod'
import type { MatchMeter } from '@/lib/shared/topology/topic-match'

export const MAX_CUSTOM_TARGET_PATTERNS = 100

/**
 * An exchange-name pattern of the custom replay target allow-list: `orders.*`, `billing.retry`. `*` matches any run of
 * characters (dots included, so `orders.*` also covers `orders.eu.retry`); everything else is literal and
 * case-sensitive, as exchange names are. The characters are those exchange names are made of in practice; the
 * wildcard is the only special one, so a pattern cannot be read two ways.
 */
export const customTargetPatternSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_.:\-/*]{1,255}$/, 'letters, digits, . _ - : / and * (any run of characters) only, at most 255')
  .refine((p) => !p.startsWith('amq.'), 'exchanges starting with "amq." are never replay targets')

// PUT /api/settings/replay-targets: the whole list, replacing the stored one.
export const updateReplayTargetSettingsSchema = z
  .object({ customTargetPatterns: z.array(customTargetPatternSchema).max(MAX_CUSTOM_TARGET_PATTERNS) })
  .strict()
  .transform((input) => ({ customTargetPatterns: [...new Set(input.customTargetPatterns)] }))
export type UpdateReplayTargetSettingsInput = z.infer<typeof updateReplayTargetSettingsSchema>

/** GET /api/settings/replay-targets (and the answer to PUT). */
export type ReplayTargetSettingsDto = {
  /** Exchanges a custom replay target may name (stored, editable by admins). Empty: no custom targets. */
  customTargetPatterns: string[]
  /** Further patterns from LAZARUS_REPLAY_TARGET_PATTERNS (read-only here). */
  environmentPatterns: string[]
  updatedAt: string | null
  updatedBy: string | null
}

/**
 * Glob match with `*` as the only wildcard; iterative (last-star backtracking), so no pattern can make it slow: at most
 * (pattern length + 1) × (exchange length + 1) steps, which `meter` counts for the tests.
 */
export function exchangePatternMatches(pattern: string, exchange: string, meter?: MatchMeter): boolean {
  let p = 0
  let e = 0
  let star = -1
  let resume = 0
  while (e < exchange.length) {
    if (meter) meter.steps++
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === exchange[e]) {
      p++
      e++
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++
      resume = e
    } else if (star >= 0) {
      p = star + 1
      e = ++resume
    } else {
      return false
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++
  return p === pattern.length
}
