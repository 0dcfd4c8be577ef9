'use client'

import { Fragment, useMemo, useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { DataTable, DetailRow, DetailsToggle, type DataColumn } from '@/components/ui/data-table'
import { LoadMore } from '@/components/ui/load-more'
import { ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { visibleText } from '@/lib/client/format'
import { useAlertEvents } from '@/lib/client/use-alerts'
import type { AlertEventDto } from '@/lib/shared/schemas/alert'
import { AlertKindBadge, EventSubject, RateVsThreshold } from './alert-format'
import { DeliverySummary } from './delivery-summary'

const COLUMNS: DataColumn[] = [
  { header: 'When', width: 'w-56' },
  { header: 'State', width: 'w-24' },
  { header: 'Rule', width: 'w-28' },
  { header: 'Subject' },
  { header: 'Rate', width: 'w-48' },
  { header: 'Notified', width: 'w-56' },
  { width: 'w-20' },
]

const STATE_TONES = { firing: 'red', recovered: 'zinc', resolved: 'green' } as const
const STATE_TITLES: Record<AlertEventDto['state'], string> = {
  firing: 'In breach, or new',
  recovered: 'One subject is back under the threshold (recorded, not sent)',
  resolved: 'The rule was quiet for its window: every webhook was told, PagerDuty incidents resolved',
}

function EventRow({ event }: { event: AlertEventDto }) {
  const [open, setOpen] = useState(false)
  return (
    <Fragment>
      <tr data-alert-event={event.id} data-state={event.state} className={cn(open && 'bg-zinc-50')}>
        <td className="truncate text-xs text-zinc-600 tabular-nums">
          <AbsoluteTime iso={event.at} />
          <span className="ml-1.5 text-zinc-400">
            <RelativeTime iso={event.at} />
          </span>
        </td>
        <td>
          <Badge tone={STATE_TONES[event.state]} title={STATE_TITLES[event.state]}>
            {event.state}
          </Badge>
        </td>
        <td>
          <AlertKindBadge kind={event.kind} />
        </td>
        <td className="truncate">
          <EventSubject subject={event.subject} />
        </td>
        <td className="truncate">
          <RateVsThreshold event={event} />
        </td>
        <td className="truncate" data-testid="notified">
          <DeliverySummary event={event} />
        </td>
        <td className="text-right">
          <DetailsToggle open={open} onToggle={() => setOpen(!open)} />
        </td>
      </tr>
      {open && (
        <DetailRow columns={COLUMNS}>
          <p className="text-xs font-medium text-zinc-500">Message</p>
          <p className="mt-0.5 font-mono text-xs break-words whitespace-pre-wrap text-zinc-800">{visibleText(event.text)}</p>
          {event.delivery.length > 0 && (
            <ul className="mt-2 space-y-0.5 text-xs">
              {event.delivery.map((d, i) => (
                <li key={`${i}:${d.url}`} className="flex min-w-0 gap-2">
                  <span className={cn('w-20 shrink-0', d.ok ? 'text-emerald-700' : 'text-red-700')}>{d.ok ? `HTTP ${d.status}` : 'failed'}</span>
                  <span className="min-w-0 truncate font-mono text-zinc-700" title={visibleText(d.url)}>
                    {visibleText(d.url)}
                  </span>
                  {d.error && <span className="min-w-0 truncate text-red-700">{visibleText(d.error)}</span>}
                </li>
              ))}
            </ul>
          )}
        </DetailRow>
      )}
    </Fragment>
  )
}

/** Every breach and recovery, newest first, with whether it was sent and how each webhook answered. */
export function AlertHistory() {
  const query = useAlertEvents()
  const events = useMemo(() => query.data?.pages.flatMap((p) => p.events) ?? [], [query.data])

  if (query.error && events.length === 0) return <ErrorState className="m-3" title="Could not load the alert history" error={query.error} onRetry={() => void query.refetch()} />
  return (
    <>
      <DataTable label="Alert history" columns={COLUMNS} pending={query.isPending} skeletonRows={3}>
        {events.map((e) => <EventRow key={e.id} event={e} />)}
      </DataTable>
      {!query.isPending && !query.error && events.length === 0 && (
        <p className="px-3 py-3 text-zinc-500" data-testid="no-alert-events">
          No alerts yet. Breaches, recoveries and resolutions are recorded here as the rules are evaluated.
        </p>
      )}
      <LoadMore pages={query} loaded={events.length} one="event" />
    </>
  )
}
