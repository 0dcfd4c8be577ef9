import { z } from 'zod'

/**
 * Staged replays (docs/operations.md#staged-replays): a canary, an observation window, then ramp stages. The stage
 * arithmetic lives here, shared, so the plan dialog shows the same boundaries the server freezes on the job.
 */

/** What the plan dialog offers for a job at or over the admin's size (Settings): canary 10 messages or 1 %, whichever is more. */
export const DEFAULT_CANARY_COUNT = 10
export const DEFAULT_CANARY_PERCENT = 1
export const DEFAULT_RAMP_PERCENTS = [10, 50, 100] as const
export const DEFAULT_HALT_PERCENT = 10
export const DEFAULT_HALT_MIN_MESSAGES = 5
/** Added to the source's retry tiers: a failed copy also waits in the drainer's batch and the consumer's own retries. */
export const WINDOW_MARGIN_SECONDS = 120
export const DEFAULT_STAGED_FROM_MESSAGES = 1000
export const MAX_WINDOW_SECONDS = 86_400

export const stagingInputSchema = z
  .object({
    /** The canary as a number of messages … */
    canaryCount: z.number().int().min(1).max(10_000_000).optional(),
    /** … or as a share of the job (percent); neither: the larger of 10 messages and 1 %. */
    canaryPercent: z.number().min(0.01).max(100).optional(),
    /** The observation window after each stage but the last; default: the source's retry tiers + 2 minutes. */
    windowSeconds: z.number().int().min(0).max(MAX_WINDOW_SECONDS).optional(),
    /** Where each ramp stage ends, as a percentage of the job, ascending, the last 100. */
    rampPercents: z
      .array(z.number().min(0.01).max(100))
      .min(1)
      .max(10)
      .refine((p) => p.every((v, i) => i === 0 || v > p[i - 1]), 'ramp percentages must ascend')
      .refine((p) => p[p.length - 1] === 100, 'the last ramp stage must be 100')
      .optional(),
    /** Halt when this percentage of a stage's published messages failed again … */
    haltPercent: z.number().min(0.01).max(100).optional(),
    /** … and at least this many did. */
    haltMinMessages: z.number().int().min(1).max(10_000_000).optional(),
  })
  .strict()
  .refine((s) => s.canaryCount === undefined || s.canaryPercent === undefined, 'give canaryCount or canaryPercent, not both')
export type StagingInput = z.infer<typeof stagingInputSchema>

export type StageShape = { canaryCount: number | null; canaryPercent: number | null; rampPercents: readonly number[] }

/** The canary's size for a job of `total` messages (at least 1, at most the job). */
export function canarySize(total: number, shape: Pick<StageShape, 'canaryCount' | 'canaryPercent'>): number {
  const n = shape.canaryCount !== null
    ? shape.canaryCount
    : shape.canaryPercent !== null
      ? Math.ceil((total * shape.canaryPercent) / 100)
      : Math.max(DEFAULT_CANARY_COUNT, Math.ceil((total * DEFAULT_CANARY_PERCENT) / 100))
  return Math.min(total, Math.max(1, n))
}

/**
 * The last item seq of each stage (items are numbered 1..total in publish order): the canary, then each ramp
 * percentage of the job, rounded up. Stages that would be empty (a ramp below the canary, two percentages that round
 * to the same item) are dropped; the last bound is always `total`.
 */
export function stageBounds(total: number, shape: StageShape): number[] {
  if (total <= 0) return []
  const bounds = [canarySize(total, shape)]
  for (const percent of shape.rampPercents) {
    const through = Math.min(total, Math.ceil((total * percent) / 100))
    if (through > bounds[bounds.length - 1]) bounds.push(through)
  }
  if (bounds[bounds.length - 1] < total) bounds.push(total)
  return bounds
}

/** The stage (0 = the canary) an item seq belongs to. */
export function stageOf(seq: number, bounds: readonly number[]): number {
  const i = bounds.findIndex((b) => seq <= b)
  return i === -1 ? bounds.length - 1 : i
}

/** The observation window the plan suggests: the retry tiers' TTLs (seconds; null when unknown) plus 2 minutes. */
export function suggestedWindowSeconds(retryTtlSeconds: number | null): number {
  return Math.min(MAX_WINDOW_SECONDS, Math.ceil(retryTtlSeconds ?? 0) + WINDOW_MARGIN_SECONDS)
}
