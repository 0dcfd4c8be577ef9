'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { memo, useRef, type ReactNode } from 'react'
import { KindBadge, StatusBadge } from '@/components/ui/badge'
import { SkeletonRows } from '@/components/ui/skeleton'
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

const COLUMNS = 11

function SortHeader({ label, value, sort, onSort, className }: { label: string; value: GroupSort; sort: GroupSort; onSort: (s: GroupSort) => void; className?: string }) {
  const active = sort === value
  return (
    <th className={className} aria-sort={active ? 'descending' : 'none'}>
      <button type="button" onClick={() => onSort(value)} className={cn('inline-flex items-center gap-0.5 uppercase hover:text-zinc-900', active && 'text-zinc-900')}>
        {label}
        <span aria-hidden className={cn('text-[10px]', !active && 'invisible')}>
          ↓
        </span>
      </button>
    </th>
  )
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
    <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
      <table className="data-table" aria-label="Error groups" aria-busy={loading || undefined}>
        <colgroup>
          <col />
          <col className="w-20" />
          <col className="w-28" />
          <col className="w-[4.5rem]" />
          <col className="w-[4.5rem]" />
          <col className="w-[6.5rem]" />
          <col className="w-28" />
          <col className="w-40" />
          <col className="w-44" />
          <col className="w-36" />
          <col className="w-36" />
        </colgroup>
        <thead>
          <tr>
            <th>Error</th>
            <SortHeader label="Count" value="count" sort={sort} onSort={onSort} className="text-right" />
            <th>24h</th>
            <SortHeader label="/min 5m" value="rate" sort={sort} onSort={onSort} className="text-right" />
            <th className="text-right">/min 1h</th>
            <th>First seen</th>
            <SortHeader label="Last seen" value="lastSeen" sort={sort} onSort={onSort} />
            <th>Sources</th>
            <th>Services</th>
            <th>Kinds</th>
            <th>Status</th>
          </tr>
        </thead>
        <tbody ref={body}>
          {loading && rows.length === 0 ? (
            <SkeletonRows columns={COLUMNS} rows={10} />
          ) : (
            rows.map((g, i) => <GroupRow key={g.id} group={g} index={i} cursorStore={cursorStore} />)
          )}
        </tbody>
      </table>
      {!loading && rows.length === 0 && <div className="p-4">{empty}</div>}
    </div>
  )
}
