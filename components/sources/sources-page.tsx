'use client'

import Link from 'next/link'
import { Fragment, useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Panel } from '@/components/ui/panel'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { formatCount, visibleText } from '@/lib/client/format'
import { useGuardStatus } from '@/lib/client/use-pauses'
import { useJetStreamFacts, useSources } from '@/lib/client/use-sources'
import type { SourceDto } from '@/lib/shared/schemas/source'
import { useCan } from '@/lib/client/use-session'
import { GuardCount } from '@/components/pauses/guard-count'
import { AddSourceForm } from './add-source-form'
import { JetStreamFacts } from './jetstream-facts'
import { JetStreamRemoval } from './jetstream-removal'
import { SourceActions } from './source-actions'
import { ruleText, versionRuleText } from './rule-text'
import { SourceSettingsForm } from './source-settings-form'

const COLUMNS: DataColumn[] = [
  { header: 'Queue' },
  { header: 'State', width: 'w-24' },
  { header: 'Depth', width: 'w-24', align: 'right' },
  { header: 'Drained', width: 'w-24', align: 'right' },
  { header: 'Last drain', width: 'w-28' },
  { header: 'Entity key', width: 'w-40' },
  { header: 'Guards', width: 'w-48', title: "Guards listening on the source's consumer queue (where most of its messages failed), and how many are up to date" },
  // Below xl the name needs the room: order and target fold to nothing (they are in the settings, under Edit). Not
  // DataColumn's `wide`, which removes the columns: the rows that span the table would then make columns of their own.
  { header: <span className="hidden xl:inline">Order</span>, width: 'w-0 xl:w-28' },
  { header: <span className="hidden xl:inline">Replay target</span>, width: 'w-0 xl:w-40' },
  { width: 'w-32' },
]

/** A cell of a column folded to no width below xl. */
const FOLDED = 'overflow-hidden px-0! xl:px-2!'

function targetText(target: SourceDto['defaultTarget']): string {
  if (target.type === 'source') return 'original exchange'
  if (target.type === 'queue') return 'failed queue'
  return `${visibleText(target.exchange) || '(default)'} → ${visibleText(target.routingKey)}`
}

function State({ source }: { source: SourceDto }) {
  if (source.error) return <Badge tone="red" title={visibleText(source.error)}>error</Badge>
  if (!source.enabled) return <Badge>disabled</Badge>
  return <Badge tone="green">draining</Badge>
}

export function SourcesPage() {
  const isAdmin = useCan('admin')
  const canTopology = useCan('topology:read')
  const { data, error, isPending, isFetching, refetch } = useSources()
  const [editing, setEditing] = useState<string | null>(null)
  const sources = data?.sources ?? []
  const guardStatus = useGuardStatus({ enabled: useCan('pauses:read') })
  const guards = new Map((guardStatus.data?.queues ?? []).map((q) => [q.sourceId, q]))
  const jetstream = useJetStreamFacts({ enabled: sources.some((s) => s.kind === 'jetstream') })

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between">
        <h1 className="text-base font-semibold">Sources</h1>
        <span className="text-xs text-zinc-500">{isFetching ? 'refreshing…' : 'broker depth refreshes every 5 s'}</span>
      </div>
      {data?.brokerError && (
        <p role="alert" className="rounded border border-amber-200 bg-amber-50 px-3 py-2 text-amber-900 break-words">
          {visibleText(data.brokerError)}
        </p>
      )}
      {error && !data ? (
        <ErrorState title="Could not load sources" error={error} onRetry={() => void refetch()} />
      ) : (
        <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
          <DataTable label="Sources" columns={COLUMNS} pending={isPending} skeletonRows={3}>
            {sources.map((s) => (
              <Fragment key={s.id}>
                <tr data-source={s.queue} className={cn(editing === s.id && 'bg-zinc-50')}>
                  <td className="truncate font-mono text-xs" title={`${s.vhost} ${s.queue}`}>
                    {s.kind !== 'jetstream' && s.vhost !== '/' && <span className="text-zinc-400">{visibleText(s.vhost)}/</span>}
                    {visibleText(s.queue)}
                    {s.kind === 'jetstream' && (
                      <Badge tone="green" className="ml-1.5" title="A NATS JetStream stream: its consumers' failures, captured from the server's advisories">
                        JetStream
                      </Badge>
                    )}
                    {s.kind === 'hold' && (
                      <Badge tone="sky" className="ml-1.5" title="Messages pause guards hold; stored as held and released after the pause">
                        hold
                      </Badge>
                    )}
                  </td>
                  <td>
                    <State source={s} />
                  </td>
                  <td className={cn('text-right font-medium tabular-nums', (s.depth ?? 0) > 0 ? 'text-amber-700' : 'text-zinc-700')} data-testid="depth">
                    {s.depth === null ? '—' : formatCount(s.depth)}
                  </td>
                  <td className="text-right tabular-nums">{formatCount(s.drained)}</td>
                  <td className="text-zinc-600">
                    <RelativeTime iso={s.lastDrainAt} />
                  </td>
                  <td className="truncate font-mono text-xs text-zinc-700" title={[ruleText(s.entityKey), versionRuleText(s.entityVersion)].filter(Boolean).join('\n')}>
                    {ruleText(s.entityKey)}
                    {s.entityVersion && <div className="truncate text-[11px] text-zinc-500">{versionRuleText(s.entityVersion)}</div>}
                  </td>
                  <td className="truncate" title={guards.get(s.id) ? `consumer queue ${visibleText(guards.get(s.id)!.queue)}` : undefined}>
                    {s.kind !== 'dlq' ? (
                      <span className="text-zinc-400">—</span>
                    ) : guards.get(s.id) ? (
                      <GuardCount counts={guards.get(s.id)} compact />
                    ) : (
                      <span className="text-xs text-zinc-400" title="No stored dead letter names the queue it failed in">
                        {guardStatus.isPending ? '…' : 'no consumer queue'}
                      </span>
                    )}
                  </td>
                  <td className={FOLDED}>
                    {s.orderSensitive || s.critical ? (
                      <span className="flex gap-1">
                        {s.orderSensitive && <Badge tone="violet">sensitive</Badge>}
                        {s.critical && <Badge tone="red">critical</Badge>}
                      </span>
                    ) : (
                      <span className="text-zinc-400">—</span>
                    )}
                  </td>
                  <td className={cn(FOLDED, 'truncate text-xs text-zinc-700')} title={s.kind === 'jetstream' ? 'Replays publish each copy to the subject it was read from, through JetStream' : targetText(s.defaultTarget)}>
                    {s.kind === 'jetstream' ? 'original subject' : targetText(s.defaultTarget)}
                  </td>
                  <td>
                    <div className="flex items-center justify-end gap-0.5">
                      {canTopology && s.kind === 'dlq' && (
                        <Link href={`/topology?source=${encodeURIComponent(s.id)}`} className="px-1 text-xs whitespace-nowrap text-brand hover:underline" title="This source's queue on the broker's graph, with the doctor's findings">
                          Topology
                        </Link>
                      )}
                      {isAdmin && (
                        <Button variant="ghost" className="px-1.5" aria-expanded={editing === s.id} onClick={() => setEditing(editing === s.id ? null : s.id)}>
                          {editing === s.id ? 'Close' : 'Edit'}
                        </Button>
                      )}
                    </div>
                  </td>
                </tr>
                {s.kind === 'jetstream' && (
                  <tr data-facts-of={s.queue}>
                    <td colSpan={COLUMNS.length} className="h-auto! py-1">
                      <JetStreamFacts source={s} facts={jetstream.data} asking={jetstream.isPending} />
                    </td>
                  </tr>
                )}
                {s.error && (
                  <tr>
                    <td colSpan={COLUMNS.length} className="h-auto! py-1 text-xs break-words text-red-700">
                      {visibleText(s.error)}
                    </td>
                  </tr>
                )}
                {editing === s.id && (
                  <tr>
                    <td colSpan={COLUMNS.length} className="h-auto! p-0!">
                      <SourceSettingsForm source={s} onDone={() => setEditing(null)} />
                      {s.kind === 'jetstream' && <JetStreamRemoval source={s} />}
                      {s.kind !== 'hold' && <SourceActions source={s} onDone={() => setEditing(null)} />}
                    </td>
                  </tr>
                )}
              </Fragment>
            ))}
          </DataTable>
          {!isPending && sources.length === 0 && (
            <div className="p-4">
              <EmptyState title="No sources yet">Add the terminal DLQs Lazarus should drain, or a JetStream stream, below; or set LAZARUS_SOURCES.</EmptyState>
            </div>
          )}
        </div>
      )}
      {isAdmin && (
        <Panel title="Add a source">
          <AddSourceForm />
        </Panel>
      )}
    </div>
  )
}
