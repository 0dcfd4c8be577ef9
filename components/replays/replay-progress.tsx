import { cn } from '@/lib/client/cn'
import { formatCount } from '@/lib/client/format'
import { outcomeText, progressPercent, type JobCounts } from '@/lib/client/replay-outcome'

const width = (n: number, total: number) => `${total > 0 ? Math.min(100, (n / total) * 100) : 0}%`

const SEGMENTS = [
  { key: 'confirmed', className: 'bg-emerald-500', label: 'replayed' },
  { key: 'released', className: 'bg-sky-500', label: 'released' },
  { key: 'unroutable', className: 'bg-orange-400', label: 'unroutable' },
  { key: 'failed', className: 'bg-red-500', label: 'failed' },
  { key: 'skipped', className: 'bg-zinc-300', label: 'skipped' },
  { key: 'cancelled', className: 'bg-amber-300', label: 'cancelled' },
] as const

/** Of the total, the share that was replayed (confirmed) or released: what a finished job's percentage says. */
function replayedPercent(job: JobCounts): number {
  return job.total > 0 ? Math.floor(((job.confirmed + job.released) / job.total) * 100) : 0
}

/**
 * A stacked bar: confirmed (green), released (sky), unroutable (orange), failed (red), skipped (grey) and
 * cancelled (amber) out of the total. While the job runs the percentage is how far it got; once it ended, how much
 * of it was replayed, beside what happened to the rest ("10 replayed · 62 cancelled", never "72 of 72 done").
 * `size="sm"` is the list's inline variant.
 */
export function ReplayProgress({ job, size = 'md', label = 'Replay progress', note }: { job: JobCounts; size?: 'sm' | 'md'; label?: string; note?: string | null }) {
  const active = job.status === 'pending' || job.status === 'running'
  const percent = progressPercent(job)
  const shown = active ? percent : replayedPercent(job)
  const outcome = outcomeText(job)
  return (
    <div className="flex min-w-0 items-center gap-2">
      <div
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={active ? `${percent}% · ${outcome}` : outcome}
        className={cn('relative flex min-w-0 overflow-hidden rounded-full bg-zinc-100', size === 'sm' ? 'h-1.5 w-16 shrink-0' : 'h-3 flex-1')}
      >
        {SEGMENTS.map((s) => (
          <span key={s.key} title={`${formatCount(job[s.key])} ${s.label}`} className={cn('h-full transition-[width] duration-700 ease-out', s.className)} style={{ width: width(job[s.key], job.total) }} />
        ))}
        {active && <span aria-hidden data-testid="progress-pulse" className="absolute inset-0 motion-safe:animate-pulse bg-white/20" />}
      </div>
      <span
        className={cn('shrink-0 text-right whitespace-nowrap tabular-nums', size === 'sm' ? 'w-9 text-xs text-zinc-600' : 'w-14 font-semibold')}
        title={active ? 'done so far' : 'replayed'}
        data-testid={size === 'md' ? 'progress-percent' : undefined}
      >
        {shown}%
      </span>
      <span
        data-testid={size === 'md' ? 'progress-outcome' : 'job-outcome'}
        title={outcome}
        className={cn('min-w-0 truncate text-xs tabular-nums', size === 'sm' ? 'flex-1 text-zinc-600' : 'w-72 shrink-0 text-right text-zinc-500')}
      >
        {outcome}
        {note ? ` · ${note}` : ''}
      </span>
    </div>
  )
}
