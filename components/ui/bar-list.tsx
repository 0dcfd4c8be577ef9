import Link from 'next/link'
import { formatCount, visibleText } from '@/lib/client/format'

type BarListItem = { value: string | null; count: number; href?: string }

/** A ranked list with proportional bars: the breakdowns of a group. */
export function BarList({ items, limit = 8, empty = 'None' }: { items: readonly BarListItem[]; limit?: number; empty?: string }) {
  if (items.length === 0) return <p className="text-zinc-500">{empty}</p>
  const max = Math.max(...items.map((i) => i.count), 1)
  const shown = items.slice(0, limit)
  return (
    <ul className="space-y-1">
      {shown.map((item, i) => {
        const label = item.value === null ? '(none)' : visibleText(item.value || '(empty)')
        return (
          <li key={`${i}:${item.value}`} className="relative flex h-6 items-center gap-2 overflow-hidden rounded px-1.5">
            <span aria-hidden className="absolute inset-y-0 left-0 rounded bg-brand/10" style={{ width: `${(item.count / max) * 100}%` }} />
            <span className="relative min-w-0 flex-1 truncate font-mono text-xs" title={label}>
              {item.href ? (
                <Link href={item.href} className="hover:underline">
                  {label}
                </Link>
              ) : (
                label
              )}
            </span>
            {item.count > 0 && <span className="relative text-xs text-zinc-600 tabular-nums">{formatCount(item.count)}</span>}
          </li>
        )
      })}
      {items.length > limit && <li className="px-1.5 text-xs text-zinc-500">+{items.length - limit} more</li>}
    </ul>
  )
}
