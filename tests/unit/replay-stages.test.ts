import { describe, expect, it } from 'vitest'
import { canarySize, stageBounds, stageOf, suggestedWindowSeconds } from '@/lib/shared/replay-stages'
import { decideHalt, publishedPerStage } from '@/lib/server/replay/halt-decision'

const DEFAULT_SHAPE = { canaryCount: null, canaryPercent: null, rampPercents: [10, 50, 100] }

describe('stage arithmetic', () => {
  it('takes the larger of 10 messages and 1 % as the default canary, never more than the job', () => {
    expect(canarySize(500, DEFAULT_SHAPE)).toBe(10)
    expect(canarySize(100_000, DEFAULT_SHAPE)).toBe(1000)
    expect(canarySize(4, DEFAULT_SHAPE)).toBe(4)
    expect(canarySize(1000, { canaryCount: 25, canaryPercent: null })).toBe(25)
    expect(canarySize(1000, { canaryCount: null, canaryPercent: 0.05 })).toBe(1)
  })

  it('bounds the canary, then each ramp percentage rounded up, dropping empty stages; the last is the total', () => {
    expect(stageBounds(1000, DEFAULT_SHAPE)).toEqual([10, 100, 500, 1000])
    expect(stageBounds(1001, DEFAULT_SHAPE)).toEqual([11, 101, 501, 1001])
    // A canary bigger than the first ramp swallows it.
    expect(stageBounds(1000, { canaryCount: 200, canaryPercent: null, rampPercents: [10, 50, 100] })).toEqual([200, 500, 1000])
    expect(stageBounds(3, DEFAULT_SHAPE)).toEqual([3])
    expect(stageBounds(0, DEFAULT_SHAPE)).toEqual([])
    expect(stageBounds(1000, { canaryCount: 10, canaryPercent: null, rampPercents: [100] })).toEqual([10, 1000])
  })

  it('finds an item seq\'s stage', () => {
    const bounds = [10, 100, 500, 1000]
    expect([1, 10, 11, 100, 101, 1000].map((s) => stageOf(s, bounds))).toEqual([0, 0, 1, 1, 2, 3])
  })

  it('suggests the retry tiers plus two minutes as the window', () => {
    expect(suggestedWindowSeconds(null)).toBe(120)
    expect(suggestedWindowSeconds(5 + 30 + 300)).toBe(455)
  })

  it('counts a stage as published as far as the job claimed it', () => {
    expect(publishedPerStage([10, 100, 1000], 60, 2)).toEqual([
      { index: 0, published: 10, refailed: 0 }, { index: 1, published: 50, refailed: 0 }, { index: 2, published: 0, refailed: 0 },
    ])
  })
})

describe('the halt decision', () => {
  const base = { haltShare: 0.1, haltMin: 5, newGroups: [] }

  it('halts when a stage reaches both the share and the minimum count', () => {
    expect(decideHalt({ ...base, stages: [{ index: 0, published: 20, refailed: 5 }] })).toMatchObject({
      stage: 0, reason: 'share', evidence: { published: 20, refailed: 5, sharePercent: 25, haltPercent: 10, haltMinMessages: 5 },
    })
  })

  it('does not halt on a share below the threshold, nor on fewer messages than the minimum', () => {
    expect(decideHalt({ ...base, stages: [{ index: 0, published: 100, refailed: 9 }] })).toBeNull()
    expect(decideHalt({ ...base, stages: [{ index: 0, published: 10, refailed: 4 }] })).toBeNull()
    expect(decideHalt({ ...base, stages: [{ index: 0, published: 0, refailed: 0 }] })).toBeNull()
  })

  it('names the first stage that trips', () => {
    const decision = decideHalt({ ...base, stages: [{ index: 1, published: 100, refailed: 50 }, { index: 0, published: 10, refailed: 5 }] })
    expect(decision?.stage).toBe(0)
  })

  it('halts on a single re-failure in a new error group, below any share', () => {
    const decision = decideHalt({ ...base, stages: [{ index: 0, published: 100, refailed: 1 }, { index: 1, published: 10, refailed: 1 }], newGroups: [{ id: '7', title: 'Ledger locked', count: 1, stage: 1 }] })
    expect(decision).toMatchObject({ stage: 1, reason: 'new-group', evidence: { newGroups: [{ id: '7', title: 'Ledger locked', count: 1 }] } })
  })
})
