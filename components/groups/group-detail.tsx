'use client'

import { CopyTicketButton } from '@/components/export/copy-ticket-button'
import { ExportMenu } from '@/components/export/export-menu'
import Link from 'next/link'
import { useMemo } from 'react'
import { MessageFilters } from '@/components/messages/message-filters'
import { MessageList } from '@/components/messages/message-list'
import { PauseLink } from '@/components/pauses/pause-link'
import { ReplayActions } from '@/components/replays/replay-actions'
import { GroupTraces } from '@/components/traces/group-traces'
import { renderSelectionActions } from '@/components/replays/selection-actions'
import { StatusBadge } from '@/components/ui/badge'
import { BarList } from '@/components/ui/bar-list'
import { Panel, Stat } from '@/components/ui/panel'
import { DetailSkeleton } from '@/components/ui/skeleton'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { Tabs } from '@/components/ui/tabs'
import { RelativeTime } from '@/components/ui/time'
import { ApiError } from '@/lib/client/api'
import { MESSAGE_FILTER_KEYS, type MessageFilterKey } from '@/lib/client/filters'
import { formatCount, formatRate, visibleText } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { useGroup } from '@/lib/client/use-groups'
import { useUrlState } from '@/lib/client/use-url-state'
import type { BreakdownEntryDto, GroupDto } from '@/lib/shared/schemas/group'
import { ArrivalsChart, type ChartZoom } from './arrivals-chart'
import { GroupTriage } from './group-triage'
import { GroupOrigin } from './groups-table'

const RANGES = [
  { value: '24h', label: '24h' },
  { value: '7d', label: '7d' },
  { value: '30d', label: '30d' },
] as const
type Range = (typeof RANGES)[number]['value']

// On this page `range` belongs to the chart, and `from`/`to` are the chart's zoom: the message list below is the
// whole group, or the buckets zoomed in on.
const FIXED: readonly MessageFilterKey[] = ['group', 'range', 'from', 'to']
const LIST_KEYS = [...MESSAGE_FILTER_KEYS.filter((k) => !FIXED.includes(k)), 'limit', 'range', 'from', 'to'] as const

/** Links a breakdown entry to the group's messages with that value; "(none)" entries cannot be filtered for. */
const facetLinks = (facets: BreakdownEntryDto[], id: string, key: string) =>
  facets.map((f) => ({ ...f, href: f.value === null ? undefined : `/messages?group=${id}&${key}=${encodeURIComponent(f.value)}` }))

function Header({ group }: { group: GroupDto }) {
  const title = visibleText(group.title)
  return (
    <header className="space-y-1">
      <nav className="text-xs text-zinc-500" aria-label="Breadcrumb">
        <Link href="/" className="hover:text-zinc-900 hover:underline">
          Error groups
        </Link>{' '}
        / #{group.id}
      </nav>
      <div className="flex items-start gap-3">
        <h1 className="min-w-0 flex-1 font-mono text-[15px] font-semibold break-all text-zinc-900">{title}</h1>
        <StatusBadge status={group.status} />
        <div className="flex shrink-0 items-center gap-2">
          <CopyTicketButton kind="group" id={group.id} />
          <ExportMenu selection={{ groupId: group.id }} count={group.count} />
          <PauseLink label="Pause its entities" groupId={group.id} />
          <ReplayActions
            selection={{ groupId: group.id }}
            subject={`group #${group.id}: ${title}`}
            replayLabel="Replay group…"
            resolveLabel="Resolve group…"
            restoreLabel={group.resolvedCount > 0 ? 'Restore resolved…' : undefined}
          />
        </div>
      </div>
      <GroupOrigin group={group} className="text-xs leading-5" />
      <p className="flex flex-wrap gap-x-4 text-xs text-zinc-500">
        {group.errorType && <span className="font-mono break-all">{visibleText(group.errorType)}</span>}
        <span className="font-mono" title="Error signature" /* docs/framework-headers.md#error-signature */>
          {visibleText(group.signature)}
        </span>
      </p>
    </header>
  )
}

export function GroupDetail({ id }: { id: string }) {
  const time = useTimeFormat()
  const { values, fields, update } = useUrlState(LIST_KEYS)
  const range: Range = RANGES.some((r) => r.value === values.range) ? (values.range as Range) : '24h'
  const { data, error, isPending, isFetching, refetch } = useGroup(id, range)
  const listParams = useMemo(() => {
    const { range: _range, ...rest } = values
    return { ...rest, ...fields, group: id } as Record<string, string>
  }, [values, fields, id])
  const { range: _r, limit: _l, from, to, ...filterValues } = values
  const zoom = useMemo<ChartZoom | null>(() => (from && to ? { from, to } : null), [from, to])

  if (isPending) return <DetailSkeleton title="w-2/3" panels={['h-[60px]', 'h-[196px]']} />
  if (error instanceof ApiError && error.status === 404) {
    return (
      <EmptyState title="Group not found">
        <Link href="/" className="text-brand underline underline-offset-2">
          Back to the error groups
        </Link>
      </EmptyState>
    )
  }
  if (error || !data) return <ErrorState title="Could not load this group" error={error} onRetry={() => void refetch()} />

  const { group, breakdown } = data
  return (
    <div className="space-y-3">
      <Header group={group} />
      <section className="grid grid-cols-3 gap-px overflow-hidden rounded-md border border-zinc-200 bg-zinc-100 sm:grid-cols-6 xl:grid-cols-11" aria-label="Numbers">
        {[
          { label: group.heldCount > 0 ? 'Held' : 'Dead', value: formatCount(group.heldCount > 0 ? group.heldCount : group.deadCount), title: 'Neither replayed nor resolved' },
          { label: 'Replayed', value: formatCount(group.replayedCount) },
          { label: 'Resolved', value: formatCount(group.resolvedCount) },
          { label: 'Count', value: formatCount(group.count), title: 'Every message stored' },
          { label: '/min · 5m', value: formatRate(group.ratePerMinute.last5) },
          { label: '/min · 1h', value: formatRate(group.ratePerMinute.last60) },
          { label: 'First seen', value: <RelativeTime iso={group.firstSeen} />, title: time.title(group.firstSeen) },
          { label: 'Last seen', value: <RelativeTime iso={group.lastSeen} />, title: time.title(group.lastSeen) },
          { label: 'Sources', value: formatCount(group.sources.length) },
          { label: 'Services', value: visibleText(group.services.join(', ') || '—') },
          { label: 'Versions', value: visibleText(group.serviceVersions.join(', ') || '—') },
        ].map((s) => (
          <Stat key={s.label} className="bg-white px-3 py-2" label={s.label} value={s.value} title={s.title ?? (typeof s.value === 'string' ? s.value : undefined)} />
        ))}
      </section>
      <div className="grid gap-3 lg:grid-cols-[minmax(0,1fr)_30rem]">
        <Panel
          title="Arrivals"
          actions={
            <>
              {isFetching && <span className="text-xs text-zinc-400">updating…</span>}
              <Tabs label="Chart range" tabs={RANGES} value={range} onChange={(r) => update({ range: r === '24h' ? null : r, from: null, to: null }, 'replace')} />
            </>
          }
        >
          <ArrivalsChart points={data.arrivals} bucket={data.bucket} zoom={zoom} onZoom={(z) => update({ from: z?.from ?? null, to: z?.to ?? null })} />
        </Panel>
        <GroupTriage group={group} />
      </div>
      <div className="grid gap-3 md:grid-cols-2 xl:grid-cols-4">
        <Panel title="Sources">
          <BarList items={breakdown.sources.map((f) => ({ ...f, href: `/messages?group=${id}&source=${encodeURIComponent(f.id)}` }))} />
        </Panel>
        <Panel title="Service versions">
          <BarList items={facetLinks(breakdown.serviceVersions, id, 'serviceVersion')} />
        </Panel>
        <Panel title="Services">
          <BarList items={facetLinks(breakdown.services, id, 'service')} />
        </Panel>
        <Panel title="Failure kinds">
          <BarList items={facetLinks(breakdown.failureKinds, id, 'failureKind')} />
        </Panel>
      </div>
      {data.breakdownSampled && <p className="text-xs text-zinc-500">Breakdowns are computed from a sample of this group&apos;s most recent messages.</p>}
      <GroupTraces id={id} />
      <section className="space-y-2" aria-label="Messages of this group">
        <div className="flex items-center justify-between gap-2">
          <h2 className="text-xs font-semibold tracking-wide text-zinc-500 uppercase">Messages</h2>
          <Link href={`/messages?group=${id}${zoom ? `&from=${encodeURIComponent(zoom.from)}&to=${encodeURIComponent(zoom.to)}` : ''}`} className="text-xs text-brand hover:underline">
            Open in Messages →
          </Link>
        </div>
        <MessageFilters values={filterValues} fields={fields} update={update} fixed={FIXED} sampleGroup={id} />
        <MessageList params={listParams} renderActions={renderSelectionActions} />
      </section>
    </div>
  )
}
