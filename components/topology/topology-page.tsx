'use client'

import Link from 'next/link'
import { useCallback, useMemo, useState } from 'react'
import { ReactFlowProvider } from '@xyflow/react'
import { Button } from '@/components/ui/button'
import { Checkbox, Select } from '@/components/ui/fields'
import { SearchBox } from '@/components/ui/search-box'
import { Skeleton } from '@/components/ui/skeleton'
import { EmptyState, ErrorState, InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useSources } from '@/lib/client/use-sources'
import { useCan } from '@/lib/client/use-session'
import { useRunTopology, useTopology, useTopologyFindings } from '@/lib/client/use-topology'
import { useUrlState } from '@/lib/client/use-url-state'
import type { FindingDto, FindingSeverity, TopologyDto, TopologyObjectRef } from '@/lib/shared/schemas/topology'
import { FindingsList, nodeIdOf } from './findings-list'
import { NodePanel } from './node-panel'
import { TopologyGraph } from './topology-graph'
import { NODE_CAP, visibleGraph } from './visible-graph'

const KEYS = ['vhost', 'source', 'node', 'q'] as const
const SEVERITY_ORDER: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 }

function RunNowButton({ vhost, source }: { vhost: string | null; source: string | null }) {
  const run = useRunTopology({ vhost, source })
  return (
    <span className="flex items-center gap-2">
      {run.error ? (
        <span className="text-xs">
          <InlineError error={run.error} />
        </span>
      ) : null}
      <Button variant="primary" onClick={() => run.mutate()} disabled={run.isPending} aria-busy={run.isPending} data-testid="run-now">
        {run.isPending && <span aria-hidden className="size-3 motion-safe:animate-spin rounded-full border-2 border-white/40 border-t-white" />}
        {run.isPending ? 'Checking the broker…' : 'Run now'}
      </Button>
    </span>
  )
}

/** The clean bill: what the last run looked at, rule by rule, so "no findings" can be trusted. */
function Checks({ dto }: { dto: TopologyDto }) {
  const count = (type: TopologyDto['nodes'][number]['type']) => dto.nodes.filter((n) => n.type === type).length
  return (
    <div className="px-3 py-2" data-testid="topology-checks">
      <p className="font-medium text-emerald-700">No findings.</p>
      <p className="mb-2 text-[12px] text-zinc-600">
        Checked {plural(count('queue'), 'queue')} and {plural(count('exchange'), 'exchange')} in {visibleText(dto.vhost)} <RelativeTime iso={dto.checkedAt} />
        {dto.jetstream.checkedAt && (
          <>
            , and {plural(count('stream'), 'stream')} and {plural(count('consumer'), 'consumer')} on NATS <RelativeTime iso={dto.jetstream.checkedAt} />
          </>
        )}{' '}
        for:
      </p>
      <ul className="space-y-0.5 text-[11px]">
        {dto.checks.map((c) => (
          <li key={c.kind} className="flex items-baseline gap-2" data-kind={c.kind}>
            <span aria-hidden className="text-emerald-600">
              ✓
            </span>
            <span className="min-w-0 flex-1 text-zinc-700">{c.description}</span>
            <span className="shrink-0 text-zinc-500 tabular-nums" title={`${c.checked} objects checked, ${c.raised} findings raised`}>
              {formatCount(c.checked)} checked
            </span>
          </li>
        ))}
      </ul>
    </div>
  )
}

function worstFirst(a: FindingDto, b: FindingDto): number {
  const settled = (f: FindingDto) => (f.resolvedAt ? 2 : f.acknowledged ? 1 : 0)
  return settled(a) - settled(b) || SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] || a.title.localeCompare(b.title)
}

function GraphToolbar({ shown, total, reduced, filter, onFilter, onShowAll }: { shown: number; total: number; reduced: string | null; filter: string; onFilter: (v: string) => void; onShowAll: () => void }) {
  const [refusal, setRefusal] = useState(false)
  return (
    <div className="flex flex-wrap items-center gap-2 border-b border-zinc-100 px-2 py-1.5">
      <SearchBox value={filter} onChange={onFilter} placeholder="Filter by name" label="Filter the graph by name" className="w-56" />
      <span className="text-xs text-zinc-500 tabular-nums" data-testid="graph-count">
        {reduced ? `showing ${formatCount(shown)} of ${formatCount(total)} nodes` : plural(total, 'node')}
        {reduced === 'findings' && ' (those with findings and their neighbours)'}
        {reduced === 'cap' && ` (cut at ${NODE_CAP})`}
      </span>
      {reduced && !filter && (
        <Button
          variant="ghost"
          onClick={() => {
            if (total > NODE_CAP) setRefusal(true)
            else onShowAll()
          }}
        >
          Show all
        </Button>
      )}
      {refusal && (
        <p role="status" className="w-full text-xs text-amber-800">
          {formatCount(total)} nodes are too many to draw at once (at most {NODE_CAP}): the layout would take long and the picture would say nothing. Filter by name to see
          another part of the graph.
        </p>
      )}
    </div>
  )
}

function TopologyBody({ dto, source, selectedId, onSelect, filter, onFilter }: { dto: TopologyDto; source: string | null; selectedId: string | null; onSelect: (id: string | null) => void; filter: string; onFilter: (v: string) => void }) {
  const canAcknowledge = useCan('topology:write')
  const [expandedId, setExpandedId] = useState<string | null>(null)
  const [centerOn, setCenterOn] = useState<{ id: string; seq: number } | null>(null)
  const graph = useMemo(() => visibleGraph(dto, { filter, showAll: false }), [dto, filter])
  const [withResolved, setWithResolved] = useState(false)
  // The graph's answer carries the open findings; the resolved ones (kept for their history) come on request, the
  // vhost's and the NATS server's.
  const all = useTopologyFindings({ vhost: dto.vhost, state: 'all', enabled: withResolved })
  const allJetStream = useTopologyFindings({ broker: 'jetstream', state: 'all', enabled: withResolved && dto.jetstream.configured })
  const resolvedToo = all.data && (!dto.jetstream.configured || allJetStream.data) ? [...all.data.findings, ...(allJetStream.data?.findings ?? [])] : null
  const listed = withResolved && resolvedToo ? resolvedToo : dto.findings
  const findings = useMemo(() => [...listed].sort(worstFirst), [listed])
  const expanded = findings.find((f) => f.id === expandedId) ?? null
  const highlight = useMemo(() => {
    if (!expanded) return null
    const ids = new Set<string>(expanded.cycle ?? [])
    for (const ref of expanded.objects) {
      const id = nodeIdOf(ref)
      if (id) ids.add(id)
    }
    return ids
  }, [expanded])
  const nodeIds = useMemo(() => new Set(dto.nodes.map((n) => n.id)), [dto.nodes])
  const selected = dto.nodes.find((n) => n.id === selectedId) ?? null
  const selectedFindings = useMemo(
    () => (selected ? findings.filter((f) => f.objects.some((o) => nodeIdOf(o) === selected.id) || f.cycle?.includes(selected.id)) : []),
    [findings, selected],
  )

  const focusObject = (ref: TopologyObjectRef) => {
    const id = nodeIdOf(ref)
    if (!id || !nodeIds.has(id)) return
    // A node outside what is drawn: filter the graph to it, so selecting it shows something.
    if (!graph.nodes.some((n) => n.id === id)) onFilter(ref.name)
    onSelect(id)
    setCenterOn((c) => ({ id, seq: (c?.seq ?? 0) + 1 }))
  }

  return (
    <div className="grid gap-3 lg:grid-cols-[minmax(0,1fr)_340px] xl:grid-cols-[minmax(0,1fr)_400px]">
      <section className="flex h-[calc(100vh-8.5rem)] min-h-[420px] min-w-0 flex-col overflow-hidden rounded-md border border-zinc-200 bg-white" aria-label="Graph">
        <GraphToolbar shown={graph.nodes.length} total={graph.total} reduced={graph.reduced} filter={filter} onFilter={onFilter} onShowAll={() => onFilter('')} />
        <div className="relative min-h-0 flex-1">
          {dto.nodes.length === 0 ? (
            <EmptyState title={`No exchanges, queues or streams in ${visibleText(dto.vhost)}`} className="m-3">
              {source ? 'The source’s queue was not found on the broker.' : 'The vhost is empty: declare a topology, or build one with the three-tier builder.'}
            </EmptyState>
          ) : graph.nodes.length === 0 ? (
            <EmptyState title="Nothing matches" className="m-3">
              No node’s name contains “{filter}”.
            </EmptyState>
          ) : (
            <ReactFlowProvider>
              <TopologyGraph nodes={graph.nodes} edges={graph.edges} selectedId={selectedId} highlight={highlight} centerOn={centerOn} onSelect={onSelect} />
            </ReactFlowProvider>
          )}
          {selected && (
            <NodePanel
              node={selected}
              findings={selectedFindings}
              onClose={() => onSelect(null)}
              onFinding={(id) => {
                setExpandedId(id)
                document.querySelector<HTMLElement>(`[data-finding-id="${CSS.escape(id)}"] button`)?.focus()
              }}
            />
          )}
        </div>
      </section>
      <section className="flex max-h-[calc(100vh-8.5rem)] min-w-0 flex-col overflow-hidden rounded-md border border-zinc-200 bg-white" aria-label="Findings panel">
        <header className="flex min-h-9 items-center justify-between gap-2 border-b border-zinc-100 px-3 py-1.5">
          <h2 className="text-xs font-semibold tracking-wide text-zinc-500 uppercase">Findings</h2>
          <span className="flex items-center gap-3 text-xs text-zinc-500 tabular-nums">
            {findings.length > 0 && `${findings.filter((f) => !f.acknowledged && !f.resolvedAt).length} open · ${findings.length} listed`}
            <label className="flex items-center gap-1">
              <Checkbox checked={withResolved} onChange={(e) => setWithResolved(e.target.checked)} />
              resolved
            </label>
          </span>
        </header>
        <div className="min-h-0 flex-1 overflow-y-auto">
          {findings.length > 0 ? (
            <FindingsList findings={findings} expandedId={expandedId} onExpand={setExpandedId} canAcknowledge={canAcknowledge} onObject={focusObject} onGraph={(id) => nodeIds.has(id)} />
          ) : dto.checkedAt || dto.jetstream.checkedAt ? (
            <Checks dto={dto} />
          ) : null}
        </div>
      </section>
    </div>
  )
}

function RunError({ testId, what, error, checkedAt }: { testId: string; what: string; error: string; checkedAt: string | null }) {
  return (
    <div role="alert" className="rounded-md border border-red-200 bg-red-50 px-3 py-2 text-red-800" data-testid={testId}>
      <p className="font-medium">The last run could not read {what}</p>
      <p className="mt-0.5 text-[12px] break-words">{error}</p>
      {checkedAt && (
        <p className="mt-0.5 text-[11px]">
          What follows is from the run before, <RelativeTime iso={checkedAt} />.
        </p>
      )}
    </div>
  )
}

/** Whether the doctor reads a NATS server beside the vhost, and when it last did (docs/jetstream.md). */
function NatsStatus({ status }: { status: TopologyDto['jetstream'] }) {
  return (
    <span className="text-xs text-zinc-500" data-testid="topology-nats">
      {!status.configured ? (
        <span title="LAZARUS_NATS_URL is unset: no JetStream streams or consumers are read">NATS JetStream not configured</span>
      ) : status.checkedAt ? (
        <>
          NATS {status.serverVersion ?? ''} checked <RelativeTime iso={status.checkedAt} />
        </>
      ) : (
        'NATS not checked yet'
      )}
    </span>
  )
}

export function TopologyPage() {
  const { values, update } = useUrlState(KEYS)
  const vhost = values.vhost || null
  const source = values.source || null
  const query = useTopology({ vhost, source })
  const canRun = useCan('topology:write')
  const sources = useSources()
  const sourceDto = source ? sources.data?.sources.find((s) => s.id === source) : undefined
  const dto = query.data
  const onSelect = useCallback((id: string | null) => update({ node: id }, 'replace'), [update])

  return (
    <div className="space-y-3">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2">
        <h1 className="text-base font-semibold">Topology</h1>
        {dto && dto.vhosts.length > 0 && !source && (
          <label className="flex items-center gap-1.5 text-xs text-zinc-600">
            vhost
            <Select
              aria-label="vhost"
              value={dto.vhost}
              options={(dto.vhosts.includes(dto.vhost) ? dto.vhosts : [dto.vhost, ...dto.vhosts]).map((v) => ({ value: v, label: visibleText(v) }))}
              onChange={(e) => update({ vhost: e.target.value, node: null, q: null })}
            />
          </label>
        )}
        {source && (
          <span className="text-xs text-zinc-600" data-testid="topology-source">
            Around source <span className="font-mono">{sourceDto ? visibleText(sourceDto.queue) : `#${source}`}</span>
            {dto && <> in {visibleText(dto.vhost)}</>} ·{' '}
            <Link href={`/topology${dto ? `?vhost=${encodeURIComponent(dto.vhost)}` : ''}`} className="text-brand hover:underline">
              the whole vhost
            </Link>
          </span>
        )}
        <span className="text-xs text-zinc-500" data-testid="topology-checked">
          {dto?.checkedAt ? (
            <>
              Checked <RelativeTime iso={dto.checkedAt} />
              {dto.brokerVersion && <> · RabbitMQ {dto.brokerVersion}</>}
            </>
          ) : dto ? (
            'Not checked yet'
          ) : null}
        </span>
        {dto && <NatsStatus status={dto.jetstream} />}
        <span className="ml-auto flex items-center gap-2">
          <Link href="/topology/builder" className="text-xs text-brand hover:underline">
            Three-tier builder
          </Link>
          {canRun && <RunNowButton vhost={dto?.vhost ?? vhost} source={source} />}
        </span>
      </div>

      {dto?.error && <RunError testId="topology-error" what="the broker" error={dto.error} checkedAt={dto.checkedAt} />}
      {dto?.jetstream.error && <RunError testId="topology-nats-error" what="the NATS server" error={dto.jetstream.error} checkedAt={dto.jetstream.checkedAt} />}

      {query.isPending ? (
        <div className="grid gap-3 lg:grid-cols-[minmax(0,1fr)_340px] xl:grid-cols-[minmax(0,1fr)_400px]" aria-busy>
          <Skeleton className="h-[calc(100vh-8.5rem)] min-h-[420px]" />
          <Skeleton className="h-64" />
        </div>
      ) : query.isError ? (
        <ErrorState error={query.error} title="Could not load the topology" onRetry={() => void query.refetch()} />
      ) : dto && dto.checkedAt === null && !dto.error && dto.jetstream.checkedAt === null && !dto.jetstream.error ? (
        <EmptyState title={`The doctor has not looked at ${visibleText(dto.vhost)} yet`}>
          The worker checks the broker on a schedule (every minute unless configured otherwise).{canRun ? ' Run it now to see the graph and its findings.' : ' An operator can run it now.'}
        </EmptyState>
      ) : dto && (dto.checkedAt !== null || dto.jetstream.checkedAt !== null) ? (
        <TopologyBody key={`${dto.vhost}|${source ?? ''}`} dto={dto} source={source} selectedId={values.node || null} onSelect={onSelect} filter={values.q ?? ''} onFilter={(q) => update({ q: q || null }, 'replace')} />
      ) : null}
    </div>
  )
}
