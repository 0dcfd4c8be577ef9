import type { ReactNode } from 'react'
import { cn } from '@/lib/client/cn'

/** A Panel (components/ui/panel.tsx) whose body is flush, for tables that run edge to edge. */
export function Section({ title, actions, children, className }: { title: ReactNode; actions?: ReactNode; children: ReactNode; className?: string }) {
  return (
    <section className={cn('min-w-0 overflow-hidden rounded-md border border-zinc-200 bg-white', className)}>
      <header className="flex min-h-9 items-center justify-between gap-2 border-b border-zinc-100 px-3 py-1.5">
        <h2 className="truncate text-xs font-semibold tracking-wide text-zinc-500 uppercase">{title}</h2>
        {actions && <div className="flex shrink-0 items-center gap-2">{actions}</div>}
      </header>
      {children}
    </section>
  )
}
