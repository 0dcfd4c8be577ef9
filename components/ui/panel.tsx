import type { ReactNode } from 'react'
import { cn } from '@/lib/client/cn'

/** A white bordered section with an optional title row. */
export function Panel({ title, actions, children, className, bodyClassName }: { title?: ReactNode; actions?: ReactNode; children: ReactNode; className?: string; bodyClassName?: string }) {
  return (
    <section className={cn('min-w-0 rounded-md border border-zinc-200 bg-white', className)}>
      {(title || actions) && (
        <header className="flex min-h-9 items-center justify-between gap-2 border-b border-zinc-100 px-3 py-1.5">
          <h2 className="truncate text-xs font-semibold tracking-wide text-zinc-500 uppercase">{title}</h2>
          {actions && <div className="flex shrink-0 items-center gap-2">{actions}</div>}
        </header>
      )}
      <div className={cn('p-3', bodyClassName)}>{children}</div>
    </section>
  )
}

export function Stat({ label, value, title, className }: { label: string; value: ReactNode; title?: string; className?: string }) {
  return (
    <div className={cn('min-w-0', className)} title={title}>
      <div className="truncate text-[11px] font-medium tracking-wide text-zinc-500 uppercase">{label}</div>
      <div className="mt-0.5 truncate text-base font-semibold text-zinc-900 tabular-nums">{value}</div>
    </div>
  )
}
