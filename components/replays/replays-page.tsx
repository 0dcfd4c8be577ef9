'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { useMemo, useRef } from 'react'
import { Badge } from '@/components/ui/badge'
import { Select } from '@/components/ui/fields'
import { DataTable, WIDE_ONLY, type DataColumn } from '@/components/ui/data-table'
import { LoadMore } from '@/components/ui/load-more'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { formatCount, visibleText } from '@/lib/client/format'
import { useReplays } from '@/lib/client/use-replays'
import { useIsCursor, useRowCursor, useScrollCursorIntoView, type CursorStore } from '@/lib/client/use-row-cursor'
import { useUrlState } from '@/lib/client/use-url-state'
import { REPLAY_JOB_STATUSES, type ReplayJobDto } from '@/lib/shared/schemas/replay'
import { JobStatusBadge, selectionText, targetText } from './replay-format'
import { ReplayProgress } from './replay-progress'

const KEYS = ['status'] as const
// From 1280 px the fixed columns take 82rem (13 px each: app/globals.css): Progress has room for "1,234 replayed · 56
// cancelled" beside its bar, Status for "awaiting approval", Created for a time with its zone, Finished for "expires in
// 23h", the headers for their words; "What → where" takes the rest. Below, Total, Confirmed and Still dead (which the
// progress text also states) step aside, leaving 64rem, so a 1024 px window shows every other column whole without
// scrolling. Under TABLE_MIN_WIDTH (those sums and 11rem for "What → where") the table scrolls inside its box instead of
// cutting texts or widening the page. Keep them in step.
const COLUMNS: DataColumn[] = [
  { header: 'Job', width: 'w-24' },
  { header: 'Status', width: 'w-40' },
  { header: 'Progress', width: 'w-80' },
  { header: 'Total', width: 'w-16', align: 'right', wide: true },
  { header: 'Confirmed', width: 'w-28', align: 'right', wide: true },
  { header: 'Still dead', width: 'w-28', align: 'right', title: 'Unroutable, failed or cancelled: these stay dead', wide: true },
  { header: 'What → where' },
  { header: 'By', width: 'w-28' },
  { header: 'Created', width: 'w-52' },
  { header: 'Finished', width: 'w-32', title: 'When it finished; for a job that has not begun, when it starts or its approval expires' },
]
const TABLE_MIN_WIDTH = 'min-w-[calc(64rem+11rem)] xl:min-w-[calc(82rem+11rem)]'

function JobRow({ job, index, cursorStore }: { job: ReplayJobDto; index: number; cursorStore: CursorStore }) {
  const cursor = useIsCursor(cursorStore, index)
  const href = `/replays/${job.id}`
  const selection = selectionText(job.selection)
  const target = targetText(job.target)
  const problems = job.unroutable + job.failed + job.cancelled
  return (
    <tr data-row-index={index} data-job-id={job.id} data-cursor={cursor || undefined} onMouseDown={() => cursorStore.set(index)} className="hover:bg-zinc-50">
      <td className="font-mono text-xs">
        <Link href={href} className="text-brand hover:underline">
          #{job.id}
        </Link>
        {job.kind === 'release' && (
          <Badge tone="sky" className="ml-1.5">
            release
          </Badge>
        )}
      </td>
      <td>
        <span data-testid="job-status" className="flex">
          <JobStatusBadge status={job.status} cancelRequested={job.cancelRequested} />
        </span>
      </td>
      <td>
        <ReplayProgress job={job} size="sm" label={`Progress of replay ${job.id}`} />
      </td>
      <td className={cn('text-right tabular-nums', WIDE_ONLY)}>{formatCount(job.total)}</td>
      <td className={cn('text-right text-emerald-700 tabular-nums', WIDE_ONLY)}>{formatCount(job.confirmed)}</td>
      <td className={cn('text-right tabular-nums', WIDE_ONLY, problems > 0 ? 'text-red-700' : 'text-zinc-400')} title={`${formatCount(job.unroutable)} unroutable · ${formatCount(job.failed)} failed · ${formatCount(job.cancelled)} cancelled`}>
        {formatCount(problems)}
      </td>
      <td className="truncate text-xs text-zinc-700" title={`${selection} → ${target}`}>
        <span className="font-mono">{selection}</span> <span className="text-zinc-400">→</span> {target}
      </td>
      <td className="truncate text-xs text-zinc-700" title={visibleText(job.createdBy)}>
        {visibleText(job.createdBy)}
      </td>
      <td className="truncate text-xs text-zinc-600 tabular-nums" data-column="created">
        <AbsoluteTime iso={job.createdAt} />
      </td>
      <td className="truncate text-xs text-zinc-500" data-testid="job-when">
        <JobWhen job={job} />
      </td>
    </tr>
  )
}

/** When the job finished; for one that has not begun, when it starts (scheduled) or expires (awaiting approval). */
function JobWhen({ job }: { job: ReplayJobDto }) {
  if (job.finishedAt) return <RelativeTime iso={job.finishedAt} />
  if (job.startedAt) return 'running'
  if (job.status === 'scheduled' && job.startAt) {
    return (
      <>
        starts <RelativeTime iso={job.startAt} />
      </>
    )
  }
  if (job.status === 'awaiting_approval' && job.approvalExpiresAt) {
    return (
      <>
        expires <RelativeTime iso={job.approvalExpiresAt} />
      </>
    )
  }
  return 'waiting'
}

/** Every replay and release job, newest first, with live progress. */
export function ReplaysPage() {
  const router = useRouter()
  const { values, update } = useUrlState(KEYS)
  const status = REPLAY_JOB_STATUSES.includes(values.status as ReplayJobDto['status']) ? values.status! : ''
  const params = useMemo(() => (status ? { status } : ({} as Record<string, string>)), [status])
  const query = useReplays(params)
  const jobs = useMemo(() => query.data?.pages.flatMap((p) => p.replays) ?? [], [query.data])
  const cursorStore = useRowCursor({ count: jobs.length, onOpen: (i) => jobs[i] && router.push(`/replays/${jobs[i].id}`) })
  const body = useRef<HTMLTableSectionElement>(null)
  useScrollCursorIntoView(cursorStore, body)

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between gap-4">
        <h1 className="text-base font-semibold">Replays</h1>
        <span className="text-xs text-zinc-500">Start one from a group, a message or a selection of messages.</span>
      </div>
      <div className="flex items-center gap-2" role="search" aria-label="Replay filters">
        <Select aria-label="Status" value={status} placeholder="Any status" options={REPLAY_JOB_STATUSES.map((s) => ({ value: s, label: s.replace('_', ' ') }))} onChange={(e) => update({ status: e.target.value || null })} />
        {query.isFetching && !query.isPending && <span className="text-xs text-zinc-400">updating…</span>}
      </div>
      {query.error && jobs.length === 0 ? (
        <ErrorState title="Could not load replays" error={query.error} onRetry={() => void query.refetch()} />
      ) : (
        <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
          <div className={cn('overflow-x-auto overflow-y-hidden', query.isPlaceholderData && 'opacity-60 transition-opacity')}>
            <DataTable label="Replays" className={TABLE_MIN_WIDTH} columns={COLUMNS} pending={query.isPending} skeletonRows={8} bodyRef={body}>
              {jobs.map((j, i) => <JobRow key={j.id} job={j} index={i} cursorStore={cursorStore} />)}
            </DataTable>
          </div>
          {!query.isPending && !query.error && jobs.length === 0 && (
            <div className="p-4">
              {status ? (
                <EmptyState title={`No ${status} replays`} />
              ) : (
                <EmptyState title="No replays yet">
                  Open an{' '}
                  <Link href="/" className="text-brand underline underline-offset-2">
                    error group
                  </Link>{' '}
                  or select{' '}
                  <Link href="/messages?status=dead" className="text-brand underline underline-offset-2">
                    dead messages
                  </Link>{' '}
                  and choose Replay: a dry run shows what would happen before anything is published.
                </EmptyState>
              )}
            </div>
          )}
          <LoadMore pages={query} loaded={jobs.length} one="job" />
        </div>
      )}
    </div>
  )
}
