'use client'

import Link from 'next/link'
import { useEffect, useMemo, useRef, useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { DetailSkeleton } from '@/components/ui/skeleton'
import { LoadMore } from '@/components/ui/load-more'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { ApiError } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { isActiveJob, isWaitingJob, useCancelReplay, useRefreshAfterJob, useReplay, useReplayItems } from '@/lib/client/use-replays'
import { doneCount, stageWaitSeconds } from '@/lib/client/replay-outcome'
import { useCan } from '@/lib/client/use-session'
import { useUrlState } from '@/lib/client/use-url-state'
import { REPLAY_ITEM_STATUSES, type ReplayItemDto, type ReplayJobDetailDto, type ReplayPlanTargetDto } from '@/lib/shared/schemas/replay'
import { exchangeText, exclusionLabel, formatDuration, ItemStatusBadge, JobStatusBadge, PublishedTo, publishedToText, selectionText, targetText } from './replay-format'
import { ReplayProgress } from './replay-progress'
import { HaltedBanner, StagingPanel } from './replay-stages'
import { ArrivedSince, ReplayApprovalPanel } from './replay-approval-panel'
import { ReplayEdits } from './replay-edits'

const ITEM_KEYS = ['status'] as const

function elapsedSeconds(job: ReplayJobDetailDto): number | null {
  if (!job.startedAt) return null
  const end = job.finishedAt ? Date.parse(job.finishedAt) : Date.now()
  return Math.max(0, (end - Date.parse(job.startedAt)) / 1000)
}

/** Seconds left at the measured rate (else the limit), while the job runs; a staged job's windows still to wait too. */
function etaSeconds(job: ReplayJobDetailDto): number | null {
  const remaining = Math.max(0, job.total - doneCount(job))
  if (!isActiveJob(job) || remaining === 0) return null
  // The limit caps the rate: a start-up burst must not promise an early end.
  const publishing = remaining / (job.currentRate && job.currentRate > 0 ? Math.min(job.currentRate, job.ratePerSecond) : job.ratePerSecond)
  return publishing + stageWaitSeconds(job.staging)
}

function Numbers({ job }: { job: ReplayJobDetailDto }) {
  const active = isActiveJob(job)
  const elapsed = elapsedSeconds(job)
  const rate = job.currentRate ?? (elapsed && elapsed > 0 && !active ? job.published / elapsed : null)
  const cells: { label: string; value: string; testId: string; tone?: string; title?: string }[] = [
    { label: 'Total', value: formatCount(job.total), testId: 'count-total' },
    { label: 'Published', value: formatCount(job.published), testId: 'count-published' },
    { label: 'Confirmed', value: formatCount(job.confirmed), testId: 'count-confirmed', tone: job.confirmed > 0 ? 'text-emerald-700' : undefined },
    { label: 'Unroutable', value: formatCount(job.unroutable), testId: 'count-unroutable', tone: job.unroutable > 0 ? 'text-orange-700' : undefined, title: 'Returned by the broker: no queue was bound for the key. The message stays dead.' },
    { label: 'Failed', value: formatCount(job.failed), testId: 'count-failed', tone: job.failed > 0 ? 'text-red-700' : undefined, title: 'Nacked, timed out or refused before publishing. The message stays dead.' },
    { label: 'Skipped', value: formatCount(job.skipped), testId: 'count-skipped', title: 'No longer dead when its turn came (resolved or replayed elsewhere).' },
    { label: 'Released', value: formatCount(job.released), testId: 'count-released', title: 'Held messages of paused entities, released after the replay in arrival order.' },
    { label: 'Cancelled', value: formatCount(job.cancelled), testId: 'count-cancelled', tone: job.cancelled ? 'text-amber-700' : undefined, title: 'Not published because the job was cancelled. The message stays dead.' },
    {
      label: 'Rate',
      value: rate === null ? '—' : `${formatCount(Math.round(rate))}/s`,
      testId: 'rate',
      title: `limit ${formatCount(job.ratePerSecond)}/s${job.currentRate === null && !active ? ' · average over the run' : ''}`,
    },
    { label: active ? 'Elapsed' : 'Duration', value: formatDuration(elapsed), testId: 'duration' },
  ]
  return (
    <dl className="mt-3 grid grid-cols-3 gap-px overflow-hidden rounded-md border border-zinc-200 bg-zinc-100 sm:grid-cols-5 xl:grid-cols-10" aria-label="Counts">
      {cells.map((c) => (
        <div key={c.label} className="min-w-0 bg-white px-3 py-2" title={c.title}>
          <dt className="truncate text-[11px] font-medium tracking-wide text-zinc-500 uppercase">{c.label}</dt>
          <dd data-testid={c.testId} className={cn('mt-0.5 truncate text-base font-semibold tabular-nums', c.tone ?? 'text-zinc-900')}>
            {c.value}
          </dd>
        </div>
      ))}
    </dl>
  )
}

/** 'jetstream' when every copy of the job goes through JetStream (its plan's targets say so). */
function jobBroker(job: ReplayJobDetailDto): 'rabbitmq' | 'jetstream' {
  const targets = job.plan?.targets ?? []
  return targets.length > 0 && targets.every((t) => t.broker === 'jetstream') ? 'jetstream' : 'rabbitmq'
}

/** An exchange, or for JetStream the stream that stores the copies (docs/jetstream.md#replay). */
function targetName(t: ReplayPlanTargetDto): string {
  if (t.broker !== 'jetstream') return exchangeText(t.exchange)
  return t.stream ? `stream ${visibleText(t.stream)}` : t.exists === false ? 'no stream' : 'stream unknown'
}

/** JetStream copies a restart published again, which the stream dropped (docs/jetstream.md#replay). */
function Duplicates({ job }: { job: ReplayJobDetailDto }) {
  if (job.duplicates === 0) return null
  return (
    <p data-testid="duplicates" className="mt-1.5 text-xs text-zinc-600">
      {formatCount(job.duplicates)} {job.duplicates === 1 ? 'copy was' : 'copies were'} published again after a restart and dropped by the stream as
      duplicates (same Nats-Msg-Id): each message was stored once and counts as confirmed once.
    </p>
  )
}

function CancelDialog({ job, onClose }: { job: ReplayJobDetailDto; onClose: () => void }) {
  const cancel = useCancelReplay(job.id)
  return (
    <ConfirmDialog
      title={`Cancel replay #${job.id}?`}
      description={`${formatCount(job.total - job.published)} of ${formatCount(job.total)} messages not yet published`}
      onClose={onClose}
      onConfirm={() => cancel.mutate(undefined, { onSuccess: onClose })}
      pending={cancel.isPending}
      error={cancel.error}
      keepLabel="Keep running"
      confirmLabel="Cancel replay"
      pendingLabel="Cancelling…"
    >
      {isWaitingJob(job) ? (
        <ul className="list-disc space-y-1 pl-5 text-zinc-700">
          <li>The replay has not started: nothing was published, marked or paused.</li>
          <li>Its messages stay dead.</li>
        </ul>
      ) : (
        <ul className="list-disc space-y-1 pl-5 text-zinc-700">
          <li>Publishing stops within a second.</li>
          <li>Messages not yet published go back to dead, with “cancelled” as the reason.</li>
          <li>Messages already confirmed stay replayed.</li>
          {job.pauses.length > 0 && <li>Its paused entities are released and resumed.</li>}
        </ul>
      )}
    </ConfirmDialog>
  )
}

function Pauses({ job }: { job: ReplayJobDetailDto }) {
  if (job.pauses.length === 0)
    return <p className="text-zinc-500">{job.pauseEntities ? 'No entity needed pausing.' : 'Entities were not paused for this replay.'}</p>
  return (
    <ul className="divide-y divide-zinc-100" aria-label="Pauses of this replay">
      {job.pauses.slice(0, 50).map((p) => (
        <li key={p.id} className="flex h-8 min-w-0 items-center gap-2">
          <span className="min-w-0 flex-1 truncate font-mono text-xs" title={p.entityKey === null ? 'whole queue' : visibleText(p.entityKey)}>
            {p.entityKey === null ? <Badge tone="violet">whole queue</Badge> : visibleText(p.entityKey)}
          </span>
          <span className="max-w-[40%] shrink-0 truncate font-mono text-xs text-zinc-500">{visibleText(p.queue)}</span>
          <Badge tone={p.status === 'active' ? 'amber' : p.status === 'releasing' ? 'blue' : 'green'}>{p.status}</Badge>
        </li>
      ))}
      {job.pauses.length > 50 && <li className="pt-1 text-xs text-zinc-500">+{formatCount(job.pauses.length - 50)} more</li>}
    </ul>
  )
}

function PlanSummary({ job }: { job: ReplayJobDetailDto }) {
  const { plan } = job
  return (
    <dl className="grid grid-cols-[7rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-xs">
      <dt className="text-zinc-500">Selection</dt>
      <dd className="truncate font-mono" title={selectionText(job.selection)}>
        {job.selection && 'groupId' in job.selection ? (
          <Link href={`/groups/${job.selection.groupId}`} className="hover:underline">
            {selectionText(job.selection)}
          </Link>
        ) : (
          selectionText(job.selection)
        )}
      </dd>
      <dt className="text-zinc-500">Matched</dt>
      <dd className="tabular-nums">
        {formatCount(plan.matched)} · {formatCount(plan.replayable)} replayable
      </dd>
      {plan.excluded.map((e) => (
        <div key={e.reason} className="contents">
          <dt className="text-zinc-500">Excluded</dt>
          <dd className="truncate">
            <span className="font-medium text-amber-700 tabular-nums">{formatCount(e.count)}</span> {exclusionLabel(e.reason)}
          </dd>
        </div>
      ))}
      <dt className="text-zinc-500">Target</dt>
      <dd className="truncate">{targetText(job.target, jobBroker(job))}</dd>
      <dt className="text-zinc-500">Reaches</dt>
      <dd className="truncate" title={plan.targets.map((t) => `${targetName(t)}: ${t.queueNames.map(visibleText).join(', ')}`).join('\n')}>
        {plan.targets.length === 0
          ? '—'
          : plan.targets
              .slice(0, 3)
              .map((t) => `${targetName(t)} → ${t.queues === null ? '?' : plural(t.queues, t.broker === 'jetstream' ? 'consumer' : 'queue')}`)
              .join(' · ')}
        {plan.targets.length > 3 && ` · +${plan.targets.length - 3}`}
      </dd>
      <dt className="text-zinc-500">Rate limit</dt>
      <dd className="tabular-nums">{formatCount(job.ratePerSecond)}/s</dd>
      {job.newTrace && (
        <>
          <dt className="text-zinc-500">Trace</dt>
          <dd data-testid="job-new-trace">a new trace per copy</dd>
        </>
      )}
    </dl>
  )
}

function ItemRow({ item }: { item: ReplayItemDto }) {
  const to = publishedToText(item.exchange, item.routingKey)
  const error = item.error ? visibleText(item.error) : null
  const note = item.supersededNote ? visibleText(item.supersededNote) : null
  return (
    <tr data-item-status={item.status} data-message-id={item.messageId} data-superseded={note ? 'true' : undefined}>
      <td className="text-right text-xs text-zinc-500 tabular-nums">{item.id}</td>
      <td className="font-mono text-xs">
        <Link href={`/messages/${item.messageId}`} className="text-brand hover:underline">
          #{item.messageId}
        </Link>
        {item.kind === 'release' && (
          <Badge tone="sky" className="ml-1.5">
            release
          </Badge>
        )}
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={item.errorType ? visibleText(item.errorType) : undefined}>
        {item.errorType ? visibleText(item.errorType) : '—'}
      </td>
      <td className="truncate font-mono text-xs text-zinc-700" title={item.entityKey ? visibleText(item.entityKey) : undefined}>
        {item.entityKey ? visibleText(item.entityKey) : '—'}
      </td>
      <td>
        <ItemStatusBadge status={item.status} />
      </td>
      <td className="truncate font-mono text-xs text-zinc-600" title={to}>
        <PublishedTo exchange={item.exchange} routingKey={item.routingKey} />
      </td>
      <td className={cn('truncate text-xs', error ? 'text-red-700' : note ? 'text-violet-800' : 'text-zinc-400')} title={error ?? note ?? undefined}>
        {error ?? note ?? '—'}
      </td>
      <td className="truncate text-xs text-zinc-600 tabular-nums" data-column="at">
        <AbsoluteTime iso={item.finishedAt ?? item.publishedAt} />
      </td>
    </tr>
  )
}

// At 1024 px the fixed columns and the shares leave the reason about 10rem ("replay cancelled" fits twice). The time
// column holds a time with its zone ("2026-12-01 19:56:54 UTC−10:30"), which is never cut.
const ITEM_COLUMNS: DataColumn[] = [
  { header: '#', width: 'w-12', align: 'right' },
  { header: 'Message', width: 'w-32' },
  { header: 'Error type', width: 'w-[18%]' },
  { header: 'Entity', width: 'w-[10%]' },
  { header: 'Outcome', width: 'w-24' },
  { header: 'Published to', width: 'w-[18%]' },
  { header: 'Reason' },
  { header: 'At', width: 'w-56' },
]

function Items({ job }: { job: ReplayJobDetailDto }) {
  const { values, update } = useUrlState(ITEM_KEYS)
  const status = REPLAY_ITEM_STATUSES.includes(values.status as (typeof REPLAY_ITEM_STATUSES)[number]) ? values.status! : ''
  const params = useMemo(() => (status ? { status } : ({} as Record<string, string>)), [status])
  // A waiting job counts as live too: when it starts and ends between two polls, its items are fetched once more.
  const query = useReplayItems(job.id, params, { live: isActiveJob(job) || isWaitingJob(job) })
  const items = useMemo(() => query.data?.pages.flatMap((p) => p.items) ?? [], [query.data])
  const stale = query.isPlaceholderData

  return (
    <Panel
      title="Messages"
      bodyClassName="p-0!"
      actions={
        <>
          {query.isFetching && !query.isPending && <span className="text-xs text-zinc-400">updating…</span>}
          <Select
            aria-label="Item status"
            value={status}
            placeholder="Every outcome"
            options={REPLAY_ITEM_STATUSES.map((s) => ({ value: s, label: s.replace('_', ' ') }))}
            onChange={(e) => update({ status: e.target.value || null }, 'replace')}
          />
        </>
      }
    >
      {query.error && items.length === 0 ? (
        <div className="p-3">
          <ErrorState title="Could not load the messages of this replay" error={query.error} onRetry={() => void query.refetch()} />
        </div>
      ) : (
        <div className={stale ? 'opacity-60 transition-opacity' : undefined}>
          <DataTable label="Replay items" columns={ITEM_COLUMNS} pending={query.isPending} skeletonRows={6}>
            {items.map((item) => (
              <ItemRow key={`${item.kind}-${item.id}`} item={item} />
            ))}
          </DataTable>
          {!query.isPending && items.length === 0 && <p className="px-3 py-6 text-center text-zinc-500">{status ? `No message with outcome “${status.replace('_', ' ')}”.` : 'This replay has no messages.'}</p>}
        </div>
      )}
      <LoadMore pages={query} loaded={items.length} one="message" />
    </Panel>
  )
}

/** A replay (or release) job: live progress while it runs, its counts, its pauses, and each message's outcome. */
export function ReplayDetail({ id }: { id: string }) {
  const time = useTimeFormat()
  const { data: job, error, isPending, refetch } = useReplay(id)
  const [cancelling, setCancelling] = useState(false)
  const canCancel = useCan('messages:replay')
  const refreshAfterJob = useRefreshAfterJob()

  // When the job ends while watched, the messages, groups and pauses it touched changed too.
  const wasActive = useRef<boolean | null>(null)
  const active = isActiveJob(job)
  const notEnded = active || isWaitingJob(job)
  useEffect(() => {
    if (!job) return
    if (wasActive.current && !notEnded) refreshAfterJob()
    wasActive.current = notEnded
  }, [job, notEnded, refreshAfterJob])

  if (isPending) return <DetailSkeleton title="w-64" panels={['h-[124px]', 'h-[150px]', 'h-64']} />
  if (error instanceof ApiError && error.status === 404) {
    return (
      <EmptyState title={`Replay ${id} not found`}>
        <Link href="/replays" className="text-brand underline underline-offset-2">
          Back to the replays
        </Link>
      </EmptyState>
    )
  }
  if (error || !job) return <ErrorState title="Could not load this replay" error={error} onRetry={() => void refetch()} />

  const noun = job.kind === 'release' ? 'Release' : 'Replay'
  return (
    <div className="space-y-3">
      <header className="space-y-1">
        <nav className="text-xs text-zinc-500" aria-label="Breadcrumb">
          <Link href="/replays" className="hover:text-zinc-900 hover:underline">
            Replays
          </Link>{' '}
          / #{job.id}
        </nav>
        <div className="flex items-center gap-3">
          <h1 className="text-[15px] font-semibold">
            {noun} #{job.id}
          </h1>
          <span data-testid="job-status" className="flex">
            <JobStatusBadge status={job.status} cancelRequested={job.cancelRequested} />
          </span>
          <div className="ml-auto flex h-7 items-center gap-2">
            {canCancel && (active || isWaitingJob(job)) && !job.cancelRequested && (
              <Button variant="danger" onClick={() => setCancelling(true)} aria-haspopup="dialog">
                Cancel…
              </Button>
            )}
          </div>
        </div>
        <p className="text-xs text-zinc-500">
          {selectionText(job.selection)} to {targetText(job.target, jobBroker(job))} · by <span className="font-medium text-zinc-700">{visibleText(job.createdBy)}</span> ·{' '}
          <span title={time.title(job.createdAt)}>
            created <RelativeTime iso={job.createdAt} />
          </span>
          {job.finishedAt && (
            <>
              {' '}
              · finished <AbsoluteTime iso={job.finishedAt} />
            </>
          )}
        </p>
      </header>

      <HaltedBanner job={job} onCancel={() => setCancelling(true)} />

      {job.error && (
        <p role="alert" className="rounded-md border border-red-200 bg-red-50 px-3 py-2 break-words text-red-800">
          {visibleText(job.error)}
        </p>
      )}

      {(isWaitingJob(job) || job.approvalReasons || job.startAt) && <ReplayApprovalPanel job={job} />}

      <ReplayEdits job={job} />

      <ArrivedSince job={job} />

      <Panel title="Progress" actions={active ? <span className="text-xs text-zinc-400">live · every second</span> : undefined}>
        <ReplayProgress job={job} note={etaSeconds(job) === null ? null : `~${formatDuration(etaSeconds(job))} left`} />
        <Numbers job={job} />
        <Duplicates job={job} />
      </Panel>

      <StagingPanel job={job} />

      <div className="grid gap-3 lg:grid-cols-2">
        <Panel title="Plan">
          <PlanSummary job={job} />
        </Panel>
        <Panel title={`Pauses${job.pauses.length ? ` · ${formatCount(job.pauses.length)}` : ''}`} actions={<Link href="/pauses" className="text-xs text-brand hover:underline">All pauses →</Link>}>
          <Pauses job={job} />
        </Panel>
      </div>

      <Items job={job} />
      {cancelling && <CancelDialog job={job} onClose={() => setCancelling(false)} />}
    </div>
  )
}
