'use client'

import Link from 'next/link'
import { Stat } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { RelativeTime } from '@/components/ui/time'
import { errorMessage } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'
import { compactCount, formatCount, visibleText } from '@/lib/client/format'
import { useSummary } from '@/lib/client/use-summary'

const DRAINER_TONE: Record<string, string> = { running: 'bg-emerald-500', starting: 'bg-amber-400', 'broker-unavailable': 'bg-red-500', stopped: 'bg-zinc-400' }

/** Totals, inflow and each DLQ's live depth: the first thing to read when an alert fires. */
export function SummaryStrip() {
  const { data, error, isPending } = useSummary()
  return (
    <section aria-label="Summary" className="flex min-h-[60px] items-stretch divide-x divide-zinc-100 overflow-hidden rounded-md border border-zinc-200 bg-white">
      {isPending ? (
        <div className="flex flex-1 items-center gap-8 px-4">
          {[0, 1, 2, 3].map((i) => (
            <div key={i} className="space-y-1.5">
              <Skeleton className="h-2.5 w-16" />
              <Skeleton className="h-4 w-12" />
            </div>
          ))}
        </div>
      ) : error || !data ? (
        <p className="flex flex-1 items-center px-4 text-zinc-500">Summary unavailable: {errorMessage(error)}</p>
      ) : (
        <>
          <Stat className="w-32 shrink-0 px-4 py-2.5" label="Stored" value={compactCount(data.stored)} title={`${formatCount(data.stored)} dead letters stored`} />
          <Stat className="w-36 shrink-0 px-4 py-2.5" label="Arrivals · 1h" value={compactCount(data.arrivalsLastHour)} title={`${formatCount(data.arrivalsLastHour)} dead letters arrived in the last hour`} />
          <Stat className="w-28 shrink-0 px-4 py-2.5" label="Groups" value={compactCount(data.groups)} />
          <div className="w-40 shrink-0 px-4 py-2.5">
            <div className="text-[11px] font-medium tracking-wide text-zinc-500 uppercase">Drainer</div>
            <div className="mt-1 flex items-center gap-1.5 font-medium">
              <span aria-hidden className={cn('size-2 rounded-full', DRAINER_TONE[data.drainer?.state ?? ''] ?? 'bg-zinc-300')} />
              {data.drainer?.state ?? 'not in this process'}
            </div>
          </div>
          <div className="flex min-w-0 flex-1 items-center gap-2 overflow-x-auto px-4 py-2">
            {data.brokerError && (
              <span className="shrink-0 text-xs text-amber-700" title={visibleText(data.brokerError)}>
                broker: {visibleText(data.brokerError).slice(0, 80)}
              </span>
            )}
            {data.sources.map((s) => (
              <Link
                key={s.id}
                href={`/messages?source=${encodeURIComponent(s.id)}`}
                className={cn('flex shrink-0 flex-col rounded border px-2 py-1 hover:border-zinc-300', s.error ? 'border-red-200 bg-red-50/50' : 'border-zinc-200')}
                title={s.error ? visibleText(s.error) : `${formatCount(s.drained)} drained`}
              >
                <span className="max-w-48 truncate font-mono text-xs text-zinc-700">{s.queue}</span>
                <span className="text-xs text-zinc-500 tabular-nums">
                  depth <span className={cn('font-semibold', (s.depth ?? 0) > 0 ? 'text-amber-700' : 'text-zinc-800')}>{s.depth === null ? '—' : formatCount(s.depth)}</span>
                  {' · '}
                  <RelativeTime iso={s.lastDrainAt} />
                </span>
              </Link>
            ))}
            {data.sources.length === 0 && (
              <span className="text-zinc-500">
                No sources.{' '}
                <Link href="/sources" className="text-brand underline underline-offset-2">
                  Add a DLQ
                </Link>
              </span>
            )}
          </div>
        </>
      )}
    </section>
  )
}
