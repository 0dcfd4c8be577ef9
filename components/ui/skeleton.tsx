import { cn } from '@/lib/client/cn'

export function Skeleton({ className }: { className?: string }) {
  return <span aria-hidden data-skeleton className={cn('block motion-safe:animate-pulse rounded bg-zinc-200/80', className)} />
}

// Deterministic widths, so skeletons look like text without jumping between renders.
const WIDTHS = ['w-3/4', 'w-1/2', 'w-2/3', 'w-5/6', 'w-2/5', 'w-3/5']

/** Placeholder rows of the same fixed height as real rows, so data arriving does not move the layout. */
export function SkeletonRows({
  rows = 8,
  columns,
  rowClassName = 'h-8',
  cellClassNames,
}: {
  rows?: number
  columns: number
  rowClassName?: string
  /** Per column, for cells hidden with their column (DataTable's `wide`). */
  cellClassNames?: readonly (string | undefined)[]
}) {
  return (
    <>
      {Array.from({ length: rows }, (_, r) => (
        <tr key={r} className={cn('border-b border-zinc-100', rowClassName)} aria-hidden>
          {Array.from({ length: columns }, (_, c) => (
            <td key={c} className={cn('px-2', cellClassNames?.[c])}>
              <Skeleton className={cn('h-3', WIDTHS[(r + c) % WIDTHS.length])} />
            </td>
          ))}
        </tr>
      ))}
    </>
  )
}

/**
 * A detail page while it loads: its breadcrumb, its title and its panels, each as high as the page draws them, so
 * nothing jumps when the data arrives. `title` is the title line's width; `panels` are the panels' heights.
 */
export function DetailSkeleton({ crumb = 'w-32', title, panels }: { crumb?: string; title: string; panels: readonly string[] }) {
  return (
    <div className="space-y-3" aria-busy>
      <Skeleton className={cn('h-3', crumb)} />
      <Skeleton className={cn('h-5', title)} />
      {panels.map((height, i) => (
        <Skeleton key={i} className={cn(height, 'w-full')} />
      ))}
    </div>
  )
}
