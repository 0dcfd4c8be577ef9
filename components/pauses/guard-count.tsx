'use client'

import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import type { GuardCountsDto } from '@/lib/shared/schemas/pause'

/**
 * "guards listening: N, up to date: N" for one queue (docs/ARCHITECTURE.md#pause-hold-release, "Who listens"): amber
 * when some listening guard has not read the latest change yet, red when none listens (a pause there holds nothing).
 * `compact` drops the word "guards" where a column header says it.
 */
export function GuardCount({ counts, compact = false, className }: { counts: Pick<GuardCountsDto, 'listening' | 'upToDate'> | undefined; compact?: boolean; className?: string }) {
  if (!counts) return <span className={cn('text-zinc-400', className)}>—</span>
  const { listening, upToDate } = counts
  const tone = listening === 0 ? 'text-red-700' : upToDate < listening ? 'text-amber-700' : 'text-zinc-600'
  return (
    <span
      data-testid="guard-count"
      className={cn('text-xs whitespace-nowrap tabular-nums', tone, className)}
      title={
        listening === 0
          ? 'No guard polled for this queue in the last two minutes: a pause here holds nothing.'
          : `${plural(listening, 'guard')} polled in the last two minutes; ${formatCount(upToDate)} of them hold every change of this queue's pauses.`
      }
    >
      {compact ? 'listening' : 'guards listening'}: {formatCount(listening)}, up to date: {formatCount(upToDate)}
    </span>
  )
}

/** Said before a pause is created where no guard listens: it would be recorded, and hold nothing. */
export function NoGuardWarning({ counts, queue }: { counts: Pick<GuardCountsDto, 'listening' | 'upToDate'>; queue: string }) {
  if (counts.listening > 0 && counts.upToDate === counts.listening) return null
  return (
    <p role="status" data-testid="guard-warning" className={cn('rounded-md border px-2.5 py-1.5 text-xs', counts.listening === 0 ? 'border-red-200 bg-red-50 text-red-900' : 'border-amber-200 bg-amber-50 text-amber-900')}>
      {counts.listening === 0 ? (
        <>
          <strong className="font-medium">No guard listens on {visibleText(queue)}</strong> (guards listening: 0): this pause would be recorded but hold nothing
          until an application&apos;s guard polls for the queue.
        </>
      ) : (
        <>
          {plural(counts.listening - counts.upToDate, 'guard')} of {formatCount(counts.listening)} on {visibleText(queue)} {counts.listening - counts.upToDate === 1 ? 'has' : 'have'} not
          read the latest pauses yet; they catch up at their next poll.
        </>
      )}
    </p>
  )
}
