import type { ReactNode } from 'react'
import { errorMessage } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'

export function EmptyState({ title, children, className }: { title: string; children?: ReactNode; className?: string }) {
  return (
    <div className={cn('rounded-md border border-dashed border-zinc-300 bg-white px-6 py-10 text-center', className)}>
      <p className="font-medium text-zinc-800">{title}</p>
      {children && <div className="mx-auto mt-1 max-w-xl text-zinc-500">{children}</div>}
    </div>
  )
}

/** The API's error envelope message (or the network error), shown as text. */
export function ErrorState({ error, title = 'Could not load this', onRetry, className }: { error: unknown; title?: string; onRetry?: () => void; className?: string }) {
  return (
    <div role="alert" className={cn('rounded-md border border-red-200 bg-red-50 px-4 py-3 text-red-800', className)}>
      <p className="font-medium">{title}</p>
      <p className="mt-0.5 break-words whitespace-pre-wrap">{errorMessage(error)}</p>
      {onRetry && (
        <button type="button" onClick={onRetry} className="mt-2 text-red-900 underline underline-offset-2 hover:no-underline">
          Try again
        </button>
      )}
    </div>
  )
}

export function InlineError({ error }: { error: unknown }) {
  return (
    <span role="alert" className="text-red-700">
      {errorMessage(error)}
    </span>
  )
}
