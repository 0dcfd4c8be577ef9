import 'server-only'
import type { ReplayHaltDto, ReplayJobStagingDto } from '@/lib/shared/schemas/replay'

/** The staging columns of a replay_jobs row (replay-store.ts JOB_COLUMNS), and its latest halt as JSON. */
export type StagingColumns = {
  stage_bounds: number[] | null
  stage: number
  stage_published_at: Date | null
  window_ms: number | null
  halt_share: number | null
  halt_min: number | null
  stage_log: { stage: number; startedAt?: string; publishedAt?: string }[]
  last_halt: HaltJson | null
}

/** A replay_halts row as row_to_json gives it. */
export type HaltJson = {
  id: number | string; stage: number; reason: ReplayHaltDto['reason']; evidence: ReplayHaltDto['evidence']; decided_at: string
  outcome: ReplayHaltDto['outcome']; ended_at: string | null; ended_by: string | null
}

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null)

export function toHaltDto(h: HaltJson): ReplayHaltDto {
  return {
    id: String(h.id),
    stage: h.stage,
    reason: h.reason,
    evidence: h.evidence,
    decidedAt: iso(h.decided_at)!,
    outcome: h.outcome,
    endedAt: iso(h.ended_at),
    endedBy: h.ended_by,
  }
}

/** `started`: when the job started, which is when its canary did. */
export function toStagingDto(row: StagingColumns, started: Date | null): ReplayJobStagingDto | null {
  const bounds = row.stage_bounds
  if (!bounds || bounds.length === 0) return null
  const windowMs = row.window_ms ?? 0
  const last = row.stage >= bounds.length - 1
  return {
    stages: bounds.map((b, i) => {
      // The log appends one entry per event (started, published); the stage's are merged, the first of each kind kept.
      const entries = row.stage_log.filter((l) => l.stage === i)
      const startedAt = entries.find((l) => l.startedAt)?.startedAt ?? (i === 0 ? iso(started) : null)
      return { index: i, throughSeq: b, size: b - (i === 0 ? 0 : bounds[i - 1]), startedAt: startedAt ? iso(startedAt) : null, publishedAt: iso(entries.find((l) => l.publishedAt)?.publishedAt ?? null) }
    }),
    current: row.stage,
    windowSeconds: Math.round(windowMs / 1000),
    haltPercent: Math.round((row.halt_share ?? 0) * 100_000) / 1000,
    haltMinMessages: row.halt_min ?? 0,
    nextStageAt: row.stage_published_at && !last ? new Date(new Date(row.stage_published_at).getTime() + windowMs).toISOString() : null,
    halt: row.last_halt ? toHaltDto(row.last_halt) : null,
  }
}
