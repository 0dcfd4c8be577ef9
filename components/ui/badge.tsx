import type { ReactNode } from 'react'
import { cn } from '@/lib/client/cn'

const TONES = {
  red: 'bg-red-50 text-red-700 ring-red-600/15',
  amber: 'bg-amber-50 text-amber-800 ring-amber-600/20',
  orange: 'bg-orange-50 text-orange-800 ring-orange-600/20',
  green: 'bg-emerald-50 text-emerald-700 ring-emerald-600/20',
  blue: 'bg-blue-50 text-blue-700 ring-blue-600/15',
  sky: 'bg-sky-50 text-sky-800 ring-sky-600/20',
  violet: 'bg-violet-50 text-violet-700 ring-violet-600/15',
  fuchsia: 'bg-fuchsia-50 text-fuchsia-700 ring-fuchsia-600/15',
  zinc: 'bg-zinc-100 text-zinc-600 ring-zinc-500/15',
} as const

export type Tone = keyof typeof TONES

export function Badge({ tone = 'zinc', children, className, title }: { tone?: Tone; children: ReactNode; className?: string; title?: string }) {
  return (
    <span title={title} className={cn('inline-flex h-[18px] max-w-full items-center truncate rounded px-1.5 text-[11px] leading-none font-medium ring-1 ring-inset', TONES[tone], className)}>
      {children}
    </span>
  )
}

const KIND_TONES: Record<string, Tone> = {
  invalid: 'red',
  transient: 'amber',
  exhausted: 'orange',
  expired: 'sky',
  overflow: 'violet',
  'delivery-limit': 'fuchsia',
  unknown: 'zinc',
}

export function KindBadge({ kind }: { kind: string }) {
  return <Badge tone={KIND_TONES[kind] ?? 'zinc'}>{kind}</Badge>
}

const STATUS_TONES: Record<string, Tone> = {
  open: 'red',
  acknowledged: 'amber',
  resolved: 'green',
  muted: 'zinc',
  dead: 'red',
  replaying: 'blue',
  replayed: 'green',
  held: 'amber',
}

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={STATUS_TONES[status] ?? 'zinc'}>{status}</Badge>
}
