import { formatCount } from './format'
import type { ReplayJobDto, ReplayJobStagingDto } from '@/lib/shared/schemas/replay'

export type JobCounts = Pick<ReplayJobDto, 'status' | 'total' | 'confirmed' | 'released' | 'unroutable' | 'failed' | 'skipped' | 'cancelled'>

/**
 * Items that reached a final outcome: what the progress bar counts. `total` holds the release items too
 * (appended when the replay items are done), confirmed releases count as `released`.
 */
export function doneCount(job: JobCounts): number {
  return job.confirmed + job.released + job.unroutable + job.failed + job.skipped + job.cancelled
}

const OUTCOMES = [
  ['confirmed', 'replayed'],
  ['released', 'released'],
  ['unroutable', 'unroutable'],
  ['failed', 'failed'],
  ['skipped', 'skipped'],
  ['cancelled', 'cancelled'],
] as const

/** Jobs whose unpublished items are still to go: waiting to begin, running, or halted until resume or cancel. */
const UNFINISHED = new Set<JobCounts['status']>(['awaiting_approval', 'scheduled', 'pending', 'running', 'halted'])

/**
 * What a job did, in words that add up: "10 replayed · 62 cancelled", "3 replayed · 2 unroutable", and while it runs
 * what is still to go ("4 replayed · 16 to go"). Never "72 of 72 done" for a job that replayed 10.
 */
export function outcomeText(job: JobCounts): string {
  const parts = OUTCOMES.filter(([key]) => job[key] > 0).map(([key, label]) => `${formatCount(job[key])} ${label}`)
  const left = Math.max(0, job.total - doneCount(job))
  if (UNFINISHED.has(job.status)) {
    if (left > 0) parts.push(`${formatCount(left)} to go`)
  } else if (left > 0) {
    // A job that ended (failed) before every item got an outcome: say how many never did.
    parts.push(`${formatCount(left)} not attempted`)
  }
  return parts.length > 0 ? parts.join(' · ') : job.total === 0 ? 'no messages' : `${formatCount(job.total)} to go`
}

/** 0–100; a completed job is 100. */
export function progressPercent(job: JobCounts): number {
  if (job.status === 'completed') return 100
  if (job.total <= 0) return job.status === 'pending' || job.status === 'running' ? 0 : 100
  return Math.min(100, Math.floor((doneCount(job) / job.total) * 100))
}

/**
 * Seconds a staged job still waits between its stages: what is left of the current observation window, and a whole
 * window after each stage still to publish except the last (the last stage is observed, but nothing waits for it).
 */
export function stageWaitSeconds(staging: Pick<ReplayJobStagingDto, 'stages' | 'current' | 'windowSeconds' | 'nextStageAt'> | null, now = Date.now()): number {
  if (!staging || staging.stages.length === 0) return 0
  const last = staging.stages.length - 1
  const current = Math.min(Math.max(staging.current, 0), last)
  if (current === last) return 0
  const observing = staging.nextStageAt ? Math.max(0, (Date.parse(staging.nextStageAt) - now) / 1000) : null
  const wholeWindowsLeft = last - current - (observing === null ? 0 : 1)
  return (observing ?? 0) + wholeWindowsLeft * staging.windowSeconds
}
