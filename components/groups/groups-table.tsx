'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { memo, useRef, type ReactNode } from 'react'
import { KindBadge, StatusBadge } from '@/components/ui/badge'
import { DataTable, WIDE_ONLY, type DataColumn } from '@/components/ui/data-table'
import { Sparkline } from '@/components/ui/sparkline'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { compactCount, formatCount, formatRate, visibleText } from '@/lib/client/format'
import { rowLinkProps } from '@/lib/client/row-link'
import { useIsCursor, useRowCursor, useScrollCursorIntoView, type CursorStore } from '@/lib/client/use-row-cursor'
import type { GroupDto, GroupSort } from '@/lib/shared/schemas/group'

type Navigate = ReturnType<typeof useRouter>

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
    { ...sorted('dead', 'Dead', 'right'), width: 'w-[4.5rem]', title: 'Messages neither replayed nor resolved (held, in the held group)' },
    { header: 'Replayed', width: 'w-[5.5rem]', align: 'right' },
    { header: 'Resolved', width: 'w-[5.5rem]', align: 'right' },
    { ...sorted('count', 'Count', 'right'), width: 'w-20', title: 'Every message stored' },
    { header: '1h', width: 'w-[6.5rem]', title: 'Arrivals per minute over the last hour' },
    // Below xl the 24-hour trend (also on the group's page) gives its width to the error title.
    { header: '24h', width: 'w-[6.5rem]', title: 'Arrivals per hour over the last 24 hours', wide: true },
    { ...sorted('rate', '/min 5m', 'right'), width: 'w-20' },
    { ...sorted('lastSeen', 'Last seen'), width: 'w-28' },
    { header: 'Sources', width: 'w-32' },
    { header: 'Kinds', width: 'w-28' },
    { header: 'Status', width: 'w-32' },
  ]
}

/** The frames that tell groups with the same title apart (docs/framework-headers.md#the-fingerprint), and the services. */
export function GroupOrigin({ group, className }: { group: GroupDto; className?: string }) {
  const frames = group.topFrames.map(visibleText)
  const services = group.services.map(visibleText).join(', ')
  if (frames.length === 0 && !services) return null
  return (
    <span className={cn('block truncate font-mono text-[11px] leading-4 text-zinc-500', className)} data-testid="group-origin" title={[...frames.map((f) => `at ${f}`), services].filter(Boolean).join('\n')}>
      {frames.length > 0 && (
        <>
          <span className="text-zinc-400">at </span>
          <span className="text-zinc-700">{frames[0]}</span>
          {frames.length > 1 && <span className="text-zinc-400"> ← {frames.slice(1).join(' ← ')}</span>}
        </>
      )}
      {frames.length > 0 && services && <span className="text-zinc-300"> · </span>}
      {services && <span className="font-sans">{services}</span>}
    </span>
  )
}

const zeroDim = (n: number) => (n > 0 ? 'text-zinc-700' : 'text-zinc-300')

const GroupRow = memo(function GroupRow({ group, index, cursorStore, router }: { group: GroupDto; index: number; cursorStore: CursorStore; router: Navigate }) {
  const cursor = useIsCursor(cursorStore, index)
  const title = visibleText(group.title)
  const sources = group.sources.map(visibleText).join(', ')
  const href = `/groups/${group.id}`
  return (
    <tr data-row-index={index} data-group-id={group.id} data-cursor={cursor || undefined} className="hover:bg-zinc-50" {...rowLinkProps({ href, index, cursorStore, router })}>
      <td className="h-10! overflow-hidden py-0.5">
        {/* On-call reads the title first: up to two lines of it, wrapped at words, before anything is cut. */}
        <Link href={href} tabIndex={-1} title={title} data-testid="group-title" className="line-clamp-2 font-mono text-[12px] leading-4 break-words text-zinc-900 hover:text-brand hover:underline">
          {title}
        </Link>
        <GroupOrigin group={group} />
      </td>
      <td className="text-right tabular-nums" title={group.heldCount > 0 ? `${formatCount(group.heldCount)} held` : `${formatCount(group.deadCount)} dead`} data-testid="dead-count">
        {group.heldCount > 0 ? (
          <span className="font-medium text-amber-700">{compactCount(group.heldCount)} held</span>
        ) : (
          <span className={group.deadCount > 0 ? 'font-semibold text-red-700' : 'text-zinc-300'}>{compactCount(group.deadCount)}</span>
        )}
      </td>
      <td className={cn('text-right tabular-nums', zeroDim(group.replayedCount))} title={`${formatCount(group.replayedCount)} replayed`} data-testid="replayed-count">
        {compactCount(group.replayedCount)}
      </td>
      <td className={cn('text-right tabular-nums', zeroDim(group.resolvedCount))} title={`${formatCount(group.resolvedCount)} resolved`} data-testid="resolved-count">
        {compactCount(group.resolvedCount)}
      </td>
      <td className="text-right text-zinc-600 tabular-nums" title={formatCount(group.count)}>
        {compactCount(group.count)}
      </td>
      <td>
        <Sparkline values={group.sparklineHour} width={90} gap={0} label="last hour, per minute" />
      </td>
      <td className={WIDE_ONLY}>
        <Sparkline values={group.sparkline} width={90} />
      </td>
      <td className={cn('text-right tabular-nums', group.ratePerMinute.last5 > 0 ? 'font-medium text-zinc-900' : 'text-zinc-400')} title={`${formatRate(group.ratePerMinute.last60)}/min over the last hour`}>
        {formatRate(group.ratePerMinute.last5)}
      </td>
      <td className="truncate text-zinc-600 tabular-nums">
        <RelativeTime iso={group.lastSeen} />
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={sources}>
        {sources || '—'}
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

/** The error groups: one dense row each (title, then the frames that tell it apart), j/k to move, Enter or a click anywhere to open. */
export function GroupsTable({ groups, loading, sort, onSort, empty }: GroupsTableProps) {
  const router = useRouter()
  const rows = groups ?? []
  const body = useRef<HTMLTableSectionElement>(null)
  const cursorStore = useRowCursor({ count: rows.length, onOpen: (i) => rows[i] && router.push(`/groups/${rows[i].id}`) })
  useScrollCursorIntoView(cursorStore, body)

  return (
    // The Error column takes what the fixed columns leave, never less than 16rem, and 22rem below xl, where the 24-hour
    // sparkline is left out: two lines of the title hold 60 characters or more (at 1024 px, about 37 a line). Below
    // that width the table scrolls inside its box rather than squeezing the error or widening the page. The minimum
    // is the fixed columns' widths plus the Error column's; keep it in step with columnsFor.
    <div className="overflow-x-auto overflow-y-hidden rounded-md border border-zinc-200 bg-white">
      <DataTable label="Error groups" className="min-w-[calc(62rem+22rem)] xl:min-w-[calc(68.5rem+16rem)]" columns={columnsFor(sort, onSort)} pending={loading && rows.length === 0} skeletonRows={10} bodyRef={body}>
        {rows.map((g, i) => (
          <GroupRow key={g.id} group={g} index={i} cursorStore={cursorStore} router={router} />
        ))}
      </DataTable>
      {!loading && rows.length === 0 && <div className="p-4">{empty}</div>}
    </div>
  )
}
