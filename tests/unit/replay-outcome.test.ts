import { describe, expect, it } from 'vitest'
import { outcomeText, stageWaitSeconds, type JobCounts } from '@/lib/client/replay-outcome'

const job = (over: Partial<JobCounts>): JobCounts => ({ status: 'completed', total: 0, confirmed: 0, released: 0, unroutable: 0, failed: 0, skipped: 0, cancelled: 0, ...over })

/** What a job's progress says: counts that add up to its total, never "72 of 72 done" for a job that replayed 10. */
describe('outcomeText', () => {
  it('says what a cancelled job replayed and cancelled', () => {
    expect(outcomeText(job({ status: 'cancelled', total: 72, confirmed: 10, cancelled: 62 }))).toBe('10 replayed · 62 cancelled')
  })

  it('names unroutable, failed, skipped and released messages in a fixed order', () => {
    expect(outcomeText(job({ total: 10, confirmed: 3, released: 1, unroutable: 2, failed: 1, skipped: 3 }))).toBe('3 replayed · 1 released · 2 unroutable · 1 failed · 3 skipped')
    expect(outcomeText(job({ total: 1_500, confirmed: 1_500 }))).toBe('1,500 replayed')
  })

  it('says what is still to go while a job runs, and what a failed job never attempted', () => {
    expect(outcomeText(job({ status: 'running', total: 20, confirmed: 4 }))).toBe('4 replayed · 16 to go')
    expect(outcomeText(job({ status: 'pending', total: 20 }))).toBe('20 to go')
    expect(outcomeText(job({ status: 'failed', total: 20, confirmed: 5, unroutable: 1 }))).toBe('5 replayed · 1 unroutable · 14 not attempted')
    expect(outcomeText(job({ status: 'completed', total: 0 }))).toBe('no messages')
  })

  it('says a job that has not begun, or halted, still has its messages to go, not that it never attempted them', () => {
    expect(outcomeText(job({ status: 'awaiting_approval', total: 3 }))).toBe('3 to go')
    expect(outcomeText(job({ status: 'scheduled', total: 1 }))).toBe('1 to go')
    expect(outcomeText(job({ status: 'halted', total: 100, confirmed: 10 }))).toBe('10 replayed · 90 to go')
    expect(outcomeText(job({ status: 'rejected', total: 3, cancelled: 3 }))).toBe('3 cancelled')
  })
})

/** A staged job's time left counts the observation windows it still waits, not only the messages it still publishes. */
describe('stageWaitSeconds', () => {
  const now = Date.parse('2026-12-02T10:00:00Z')
  const stages = [0, 1, 2, 3].map((index) => ({ index, throughSeq: (index + 1) * 10, size: 10, startedAt: null, publishedAt: null }))
  const staging = (current: number, nextStageAt: string | null) => ({ stages, current, windowSeconds: 120, nextStageAt })

  it('counts a whole window after each stage still to publish but the last', () => {
    expect(stageWaitSeconds(staging(0, null), now)).toBe(3 * 120)
    expect(stageWaitSeconds(staging(2, null), now)).toBe(120)
  })

  it('counts what is left of the window being observed, then the whole ones after it', () => {
    expect(stageWaitSeconds(staging(0, '2026-12-02T10:00:30Z'), now)).toBe(30 + 2 * 120)
    expect(stageWaitSeconds(staging(2, '2026-12-02T10:01:00Z'), now)).toBe(60)
    // A window that ended between two polls waits nothing more.
    expect(stageWaitSeconds(staging(1, '2026-12-02T09:59:00Z'), now)).toBe(120)
  })

  it('waits nothing in the last stage, or for a job without stages', () => {
    expect(stageWaitSeconds(staging(3, null), now)).toBe(0)
    expect(stageWaitSeconds(null, now)).toBe(0)
  })
})
