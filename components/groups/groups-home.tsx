'use client'

import Link from 'next/link'
import { useMemo } from 'react'
import { Button } from '@/components/ui/button'
import { Select } from '@/components/ui/fields'
import { SearchBox } from '@/components/ui/search-box'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { Tabs } from '@/components/ui/tabs'
import { GROUP_FILTER_KEYS, TIME_RANGES } from '@/lib/client/filters'
import { formatCount } from '@/lib/client/format'
import { useGroups } from '@/lib/client/use-groups'
import { useSummary } from '@/lib/client/use-summary'
import { useUrlState } from '@/lib/client/use-url-state'
import { GROUP_SORTS, GROUP_STATUSES, type GroupSort, type GroupView } from '@/lib/shared/schemas/group'
import { FAILURE_KINDS } from '@/lib/shared/schemas/message-filter'
import { GroupsTable } from './groups-table'
import { SummaryStrip } from './summary-strip'

const HOME_KEYS = [...GROUP_FILTER_KEYS, 'q'] as const
/** What on-call looks at first: groups with messages left to handle. `view` is absent from the URL then. */
const VIEWS = [
  { value: 'attention', label: 'Needs attention' },
  { value: 'handled', label: 'Handled' },
  { value: 'all', label: 'All' },
] as const satisfies readonly { value: GroupView; label: string }[]

const options = (values: readonly string[]) => values.map((v) => ({ value: v, label: v }))
/** Keeps the current value selectable even when the loaded data no longer lists it. */
const withCurrent = (values: Iterable<string>, current: string | undefined) => [...new Set([...values, ...(current ? [current] : [])])].sort()

export function GroupsHome() {
  const { values, update } = useUrlState(HOME_KEYS)
  const { q, ...filters } = values
  const sort: GroupSort = GROUP_SORTS.includes(values.sort as GroupSort) ? (values.sort as GroupSort) : 'lastSeen'
  const view: GroupView = VIEWS.some((v) => v.value === values.view) ? (values.view as GroupView) : 'attention'
  const apiParams = useMemo(() => {
    const { q: _q, ...rest } = values
    return { ...rest, view } as Record<string, string>
  }, [values, view])
  const groups = useGroups(apiParams)
  const summary = useSummary()

  // The title filter is local: it narrows what is loaded, instantly, without another request.
  const shown = useMemo(() => {
    const list = groups.data?.groups
    if (!list || !q) return list
    const needle = q.toLowerCase()
    return list.filter((g) => g.title.toLowerCase().includes(needle) || (g.errorType ?? '').toLowerCase().includes(needle))
  }, [groups.data, q])

  const sourceOptions = withCurrent((summary.data?.sources ?? []).map((s) => s.queue), filters.source)
  const serviceOptions = withCurrent((groups.data?.groups ?? []).flatMap((g) => g.services), filters.service)
  const filtered = Object.keys(filters).some((k) => k !== 'sort' && k !== 'view') || Boolean(q)

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between gap-4">
        <h1 className="text-base font-semibold">Error groups</h1>
        {groups.data && (
          <span className="text-xs text-zinc-500 tabular-nums">
            {shown && shown.length !== groups.data.groups.length ? `${formatCount(shown.length)} of ` : ''}
            {formatCount(groups.data.groups.length)} groups
          </span>
        )}
      </div>
      <SummaryStrip />
      <div className="flex flex-wrap items-center gap-2" role="search" aria-label="Group filters">
        <Tabs label="Which groups" tabs={VIEWS} value={view} onChange={(v) => update({ view: v === 'attention' ? null : v })} />
        <SearchBox className="w-72" value={q ?? ''} onChange={(v) => update({ q: v || null }, 'replace')} placeholder="Filter groups by title" label="Filter groups" />
        <Select aria-label="Source" value={filters.source ?? ''} placeholder="All sources" options={options(sourceOptions)} onChange={(e) => update({ source: e.target.value || null })} />
        <Select aria-label="Status" value={filters.status ?? ''} placeholder="Any status" options={options(GROUP_STATUSES)} onChange={(e) => update({ status: e.target.value || null })} />
        <Select aria-label="Failure kind" value={filters.failureKind ?? ''} placeholder="Any kind" options={options(FAILURE_KINDS)} onChange={(e) => update({ failureKind: e.target.value || null })} />
        <Select aria-label="Service" value={filters.service ?? ''} placeholder="All services" options={options(serviceOptions)} onChange={(e) => update({ service: e.target.value || null })} />
        <Select
          aria-label="Time range"
          value={filters.range ?? ''}
          placeholder="All time"
          options={TIME_RANGES.map((r) => ({ value: r.value, label: r.label }))}
          onChange={(e) => update({ range: e.target.value || null, from: null, to: null })}
        />
        <Select
          aria-label="Sort"
          value={sort}
          options={[
            { value: 'lastSeen', label: 'Sort: last seen' },
            { value: 'dead', label: 'Sort: dead' },
            { value: 'count', label: 'Sort: count' },
            { value: 'rate', label: 'Sort: rate' },
          ]}
          onChange={(e) => update({ sort: e.target.value === 'lastSeen' ? null : e.target.value })}
        />
        {filtered && (
          <Button variant="ghost" onClick={() => update(Object.fromEntries(HOME_KEYS.filter((k) => k !== 'sort' && k !== 'view').map((k) => [k, null])))}>
            Clear filters
          </Button>
        )}
        {groups.isFetching && !groups.isPending && <span className="text-xs text-zinc-400">updating…</span>}
      </div>
      {groups.error ? (
        <ErrorState title="Could not load error groups" error={groups.error} onRetry={() => void groups.refetch()} />
      ) : (
        <GroupsTable
          groups={shown}
          loading={groups.isPending}
          sort={sort}
          onSort={(s) => update({ sort: s === 'lastSeen' ? null : s })}
          empty={
            filtered ? (
              <EmptyState title="No groups match these filters" />
            ) : view === 'attention' ? (
              <EmptyState title="Nothing needs attention">
                Every stored message was replayed or resolved.{' '}
                <button type="button" className="text-brand underline underline-offset-2" onClick={() => update({ view: 'all' })}>
                  Show all groups
                </button>
              </EmptyState>
            ) : view === 'handled' ? (
              <EmptyState title="No fully handled groups yet">A group shows here once all its messages were replayed or resolved.</EmptyState>
            ) : (
              <EmptyState title="No dead letters stored yet">
                Add a terminal DLQ on the{' '}
                <Link className="text-brand underline underline-offset-2" href="/sources">
                  Sources
                </Link>{' '}
                page, or run <code className="font-mono">npm run demo:seed</code>.
              </EmptyState>
            )
          }
        />
      )}
    </div>
  )
}
