'use client'

import { cn } from '@/lib/client/cn'

type Tab<T extends string> = { value: T; label: string; disabled?: boolean }

/** Segmented tabs for a small fixed set of views (body viewer, chart range). */
export function Tabs<T extends string>({ tabs, value, onChange, label }: { tabs: readonly Tab<T>[]; value: T; onChange: (value: T) => void; label: string }) {
  return (
    <div role="tablist" aria-label={label} className="inline-flex rounded-md border border-zinc-200 bg-zinc-100 p-0.5">
      {tabs.map((tab) => (
        <button
          key={tab.value}
          type="button"
          role="tab"
          aria-selected={tab.value === value}
          disabled={tab.disabled}
          onClick={() => onChange(tab.value)}
          className={cn(
            'h-6 rounded px-2 text-xs font-medium disabled:opacity-40',
            tab.value === value ? 'bg-white text-zinc-900 shadow-xs' : 'text-zinc-600 hover:text-zinc-900',
          )}
        >
          {tab.label}
        </button>
      ))}
    </div>
  )
}
