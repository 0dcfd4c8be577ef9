import { cn } from '@/lib/client/cn'
import { formatCount } from '@/lib/client/format'
import { doneCount, progressPercent, type JobCounts } from './replay-format'

const width = (n: number, total: number) => `${total > 0 ? Math.min(100, (n / total) * 100) : 0}%`

const SEGMENTS = [
  { key: 'confirmed', className: 'bg-emerald-500', label: 'confirmed' },
  { key: 'released', className: 'bg-sky-500', label: 'released' },
  { key: 'unroutable', className: 'bg-orange-400', label: 'unroutable' },
  { key: 'failed', className: 'bg-red-500', label: 'failed' },
  { key: 'skipped', className: 'bg-zinc-300', label: 'skipped' },
  { key: 'cancelled', className: 'bg-amber-300', label: 'cancelled' },
] as const

/**
 * A stacked bar: confirmed (green), released (sky), unroutable (orange), failed (red), skipped (grey) and
 * cancelled (amber) out of the total, with the percentage done. `size="sm"` is the list's inline variant.
 */
export function ReplayProgress({ job, size = 'md', label = 'Replay progress', note }: { job: JobCounts; size?: 'sm' | 'md'; label?: string; note?: string | null }) {
  const percent = progressPercent(job)
  const active = job.status === 'pending' || job.status === 'running'
  return (
    <div className="flex min-w-0 items-center gap-2">
      <div
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={percent}
        aria-valuetext={`${percent}%`}
        className={cn('relative flex min-w-0 flex-1 overflow-hidden rounded-full bg-zinc-100', size === 'sm' ? 'h-1.5' : 'h-3')}
      >
        {SEGMENTS.map((s) => (
          <span key={s.key} title={`${formatCount(job[s.key])} ${s.label}`} className={cn('h-full transition-[width] duration-700 ease-out', s.className)} style={{ width: width(job[s.key], job.total) }} />
        ))}
        {active && <span aria-hidden className="absolute inset-0 animate-pulse bg-white/20" />}
      </div>
      <span className={cn('shrink-0 text-right whitespace-nowrap tabular-nums', size === 'sm' ? 'w-10 text-xs text-zinc-600' : 'w-14 font-semibold')} data-testid={size === 'md' ? 'progress-percent' : undefined}>
        {percent}%
      </span>
      {size === 'md' && (
        <span className="w-56 shrink-0 truncate text-right text-xs text-zinc-500 tabular-nums">
          {formatCount(doneCount(job))} of {formatCount(job.total)} done{note ? ` · ${note}` : ''}
        </span>
      )}
    </div>
  )
}
