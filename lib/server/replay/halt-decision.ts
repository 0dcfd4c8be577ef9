import 'server-only'
import type { ReplayHaltDto } from '@/lib/shared/schemas/replay'

export type StageCount = { index: number; published: number; refailed: number }
export type NewGroupRefailure = { id: string; title: string; count: number; stage: number }

export type HaltDecisionInput = {
  /** Re-failures that count (since the last resume), per stage up to the current one. */
  stages: StageCount[]
  /** Counted re-failures whose error group none of the job's originals were in. */
  newGroups: NewGroupRefailure[]
  /** A fraction (0.1 is 10 %). */
  haltShare: number
  haltMin: number
}

export type HaltDecision = { stage: number; reason: ReplayHaltDto['reason']; evidence: ReplayHaltDto['evidence'] }

const percent = (n: number) => Math.round(n * 10_000) / 100

/**
 * Whether a staged job must halt (docs/ARCHITECTURE.md#stages-and-halts): a replayed copy failed again in a new error
 * group, or a stage's re-failures reached both the share (of its published messages) and the minimum count. The first
 * stage that trips decides, so the evidence names where things went wrong.
 */
export function decideHalt(input: HaltDecisionInput): HaltDecision | null {
  const { haltShare, haltMin } = input
  const evidence = (s: StageCount | undefined) => ({
    published: s?.published ?? 0,
    refailed: s?.refailed ?? 0,
    sharePercent: s && s.published > 0 ? percent(s.refailed / s.published) : 0,
    haltPercent: percent(haltShare),
    haltMinMessages: haltMin,
    newGroups: input.newGroups.map(({ id, title, count }) => ({ id, title, count })),
  })
  if (input.newGroups.length > 0) {
    const stage = Math.min(...input.newGroups.map((g) => g.stage))
    return { stage, reason: 'new-group', evidence: evidence(input.stages.find((s) => s.index === stage)) }
  }
  for (const s of [...input.stages].sort((a, b) => a.index - b.index)) {
    if (s.refailed >= haltMin && s.published > 0 && s.refailed / s.published >= haltShare) return { stage: s.index, reason: 'share', evidence: evidence(s) }
  }
  return null
}

/** Items of each stage claimed for publishing so far: the denominator of its share, without reading its items. */
export function publishedPerStage(bounds: readonly number[], claimedThrough: number, upTo: number): StageCount[] {
  const out: StageCount[] = []
  for (let i = 0; i <= Math.min(upTo, bounds.length - 1); i++) {
    const lo = i === 0 ? 0 : bounds[i - 1]
    out.push({ index: i, published: Math.max(0, Math.min(claimedThrough, bounds[i]) - lo), refailed: 0 })
  }
  return out
}
