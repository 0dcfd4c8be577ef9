'use client'

import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Skeleton } from '@/components/ui/skeleton'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { AlertKindBadge, EventSubject, RateVsThreshold } from './alert-format'
import { DeliverySummary } from './delivery-summary'

const COLUMNS: DataColumn[] = [
  { header: 'Subject' },
  { header: 'Rule', width: 'w-28' },
  { header: 'Rate vs threshold', width: 'w-48' },
  { header: 'Since', width: 'w-56' },
  { header: 'Notified', width: 'w-56' },
]

/** Subjects in breach right now: the latest breach of each, with its rate against the rule's threshold. */
export function FiringNow({ firing, loading }: { firing: AlertEventDto[] | undefined; loading: boolean }) {
  const rows = firing ?? []
  // Loading takes the height of the usual answer, "nothing is firing", so the page below does not move.
  if (loading && rows.length === 0) {
    return (
      <div className="flex h-10 items-center px-3" aria-busy>
        <Skeleton className="h-3 w-72" />
      </div>
    )
  }
  if (rows.length === 0) {
    return (
      <p className="flex h-10 items-center gap-2 px-3 text-zinc-600" data-testid="nothing-firing">
        <span aria-hidden className="inline-block size-2 rounded-full bg-emerald-500" />
        Nothing is firing. Every watched rate is below its threshold.
      </p>
    )
  }
  return (
    <DataTable label="Firing now" columns={COLUMNS}>
      {rows.map((e) => (
        <tr key={e.id} data-alert-event={e.id} className="bg-red-50/40">
          <td className="truncate">
            <EventSubject subject={e.subject} />
          </td>
          <td>
            <AlertKindBadge kind={e.kind} />
          </td>
          <td className="truncate">
            <RateVsThreshold event={e} />
          </td>
          <td className="truncate text-xs text-zinc-600 tabular-nums">
            <RelativeTime iso={e.at} />
            <span className="ml-1.5 text-zinc-400">
              <AbsoluteTime iso={e.at} />
            </span>
          </td>
          <td className="truncate">
            <DeliverySummary event={e} />
          </td>
        </tr>
      ))}
    </DataTable>
  )
}
