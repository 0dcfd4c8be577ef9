'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { memo, useRef, type ReactNode } from 'react'
import { KindBadge, StatusBadge } from '@/components/ui/badge'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Sparkline } from '@/components/ui/sparkline'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { compactCount, formatCount, formatRate, visibleText } from '@/lib/client/format'
import { useIsCursor, useRowCursor, useScrollCursorIntoView, type CursorStore } from '@/lib/client/use-row-cursor'
import type { GroupDto } from '@/lib/shared/schemas/group'

export type GroupSort = 'count' | 'rate' | 'lastSeen'

type GroupsTableProps = {
  groups: GroupDto[] | undefined
  loading: boolean
  sort: GroupSort
  onSort: (sort: GroupSort) => void
  empty: ReactNode
}

function SortButton({ label, value, sort, onSort }: { label: string; value: GroupSort; sort: GroupSort; onSort: (s: GroupSort) => void }) {
  const active = sort === value
  return (
    <button type="button" onClick={() => onSort(value)} className={cn('inline-flex items-center gap-0.5 uppercase hover:text-zinc-900', active && 'text-zinc-900')}>
      {label}
      <span aria-hidden className={cn('text-[10px]', !active && 'invisible')}>
        ↓
      </span>
    </button>
  )
}

/** Every sort is descending (most, fastest, latest first). */
function columnsFor(sort: GroupSort, onSort: (s: GroupSort) => void): DataColumn[] {
  const sorted = (value: GroupSort, label: string, align?: 'right'): DataColumn => ({
    header: <SortButton label={label} value={value} sort={sort} onSort={onSort} />,
    sort: sort === value ? 'descending' : 'none',
    align,
  })
  return [
    { header: 'Error' },
    { ...sorted('count', 'Count', 'right'), width: 'w-20' },
    { header: '24h', width: 'w-28' },
    { ...sorted('rate', '/min 5m', 'right'), width: 'w-[4.5rem]' },
    { header: '/min 1h', width: 'w-[4.5rem]', align: 'right' },
    { header: 'First seen', width: 'w-[6.5rem]' },
    { ...sorted('lastSeen', 'Last seen'), width: 'w-28' },
    { header: 'Sources', width: 'w-40' },
    { header: 'Services', width: 'w-44' },
    { header: 'Kinds', width: 'w-36' },
    { header: 'Status', width: 'w-36' },
  ]
}

const GroupRow = memo(function GroupRow({ group, index, cursorStore }: { group: GroupDto; index: number; cursorStore: CursorStore }) {
  const cursor = useIsCursor(cursorStore, index)
  const title = visibleText(group.title)
  const services = group.services.map(visibleText).join(', ')
  const versions = group.serviceVersions.map(visibleText).join(', ')
  const sources = group.sources.map(visibleText).join(', ')
  return (
    <tr data-row-index={index} data-cursor={cursor || undefined} onMouseDown={() => cursorStore.set(index)} className="hover:bg-zinc-50">
      <td className="truncate">
        <Link href={`/groups/${group.id}`} title={title} className="font-mono text-[12px] text-zinc-900 hover:text-brand hover:underline">
          {title}
        </Link>
      </td>
      <td className="text-right font-medium tabular-nums" title={formatCount(group.count)}>
        {compactCount(group.count)}
      </td>
      <td>
        <Sparkline values={group.sparkline} width={84} />
      </td>
      <td className={cn('text-right tabular-nums', group.ratePerMinute.last5 > 0 ? 'font-medium text-zinc-900' : 'text-zinc-400')}>{formatRate(group.ratePerMinute.last5)}</td>
      <td className={cn('text-right tabular-nums', group.ratePerMinute.last60 > 0 ? 'text-zinc-700' : 'text-zinc-400')}>{formatRate(group.ratePerMinute.last60)}</td>
      <td className="truncate text-zinc-600 tabular-nums">
        <RelativeTime iso={group.firstSeen} />
      </td>
      <td className="truncate text-zinc-600 tabular-nums">
        <RelativeTime iso={group.lastSeen} />
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={sources}>
        {sources || '—'}
      </td>
      <td className="truncate text-xs text-zinc-600" title={[services, versions].filter(Boolean).join(' · ')}>
        <span className="text-zinc-800">{services || '—'}</span>
        {versions && <span className="ml-1 font-mono text-zinc-500">{versions}</span>}
      </td>
      <td className="truncate">
        <span className="flex gap-1 overflow-hidden">
          {group.failureKinds.map((k) => (
            <KindBadge key={k} kind={k} />
          ))}
        </span>
      </td>
      <td>
        <span className="flex items-center gap-1">
          <StatusBadge status={group.status} />
          {group.ticketUrl && /^https?:\/\//i.test(group.ticketUrl) && (
            <a href={group.ticketUrl} target="_blank" rel="noopener noreferrer" title={visibleText(group.ticketUrl)} aria-label="Open ticket" className="shrink-0 rounded p-0.5 text-zinc-400 hover:bg-zinc-100 hover:text-brand">
              <svg aria-hidden viewBox="0 0 16 16" className="size-3 fill-none stroke-current" strokeWidth={1.6}>
                <path d="M6.5 3.5H4a1 1 0 0 0-1 1V12a1 1 0 0 0 1 1h7.5a1 1 0 0 0 1-1V9.5M9 3h4v4M13 3 7.5 8.5" strokeLinecap="round" strokeLinejoin="round" />
              </svg>
            </a>
          )}
        </span>
      </td>
    </tr>
  )
})

/** The error groups: one dense line each, j/k to move, Enter to open. */
export function GroupsTable({ groups, loading, sort, onSort, empty }: GroupsTableProps) {
  const router = useRouter()
  const rows = groups ?? []
  const body = useRef<HTMLTableSectionElement>(null)
  const cursorStore = useRowCursor({ count: rows.length, onOpen: (i) => rows[i] && router.push(`/groups/${rows[i].id}`) })
  useScrollCursorIntoView(cursorStore, body)

  return (
    // The Error column takes what the fixed columns leave, never less than 16rem: below that width (a 1024 px window)
    // the table scrolls inside its box rather than squeezing the error to two characters or widening the page. The
    // minimum is the fixed columns' widths plus those 16rem; keep it in step with columnsFor.
    <div className="overflow-x-auto overflow-y-hidden rounded-md border border-zinc-200 bg-white">
      <DataTable label="Error groups" className="min-w-[calc(73.5rem+16rem)]" columns={columnsFor(sort, onSort)} pending={loading && rows.length === 0} skeletonRows={10} bodyRef={body}>
        {rows.map((g, i) => (
          <GroupRow key={g.id} group={g} index={i} cursorStore={cursorStore} />
        ))}
      </DataTable>
      {!loading && rows.length === 0 && <div className="p-4">{empty}</div>}
    </div>
  )
}
