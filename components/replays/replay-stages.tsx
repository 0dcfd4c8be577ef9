'use client'

import Link from 'next/link'
import { Badge, type Tone } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { Panel } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState, InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useReplayRefailures, useResumeReplay } from '@/lib/client/use-replays'
import { useCan } from '@/lib/client/use-session'
import type { ReplayCanaryItemDto, ReplayHaltDto, ReplayJobDetailDto, ReplayJobStagingDto, ReplayRefailuresDto } from '@/lib/shared/schemas/replay'
import { formatDuration } from './replay-format'

const stageName = (index: number) => (index === 0 ? 'Canary' : `Stage ${index + 1}`)
/** "in the canary", "in stage 2": where a halt happened, in a sentence. */
const inStage = (index: number) => (index === 0 ? 'in the canary' : `in stage ${index + 1}`)

function haltText(halt: ReplayHaltDto): string {
  const e = halt.evidence
  if (halt.reason === 'new-group') return `A replayed copy failed again in a new error group: ${e.newGroups.map((g) => `“${g.title}” (${formatCount(g.count)})`).join(', ')}.`
  return `${formatCount(e.refailed)} of ${formatCount(e.published)} replayed messages ${inStage(halt.stage)} failed again (${e.sharePercent} %; the threshold is ${e.haltPercent} % and at least ${formatCount(e.haltMinMessages)}).`
}

/** The halt in force: what tripped it, and the operator's two answers. */
export function HaltedBanner({ job, onCancel }: { job: ReplayJobDetailDto; onCancel: () => void }) {
  const resume = useResumeReplay(job.id)
  const canAct = useCan('messages:replay')
  const halt = job.staging?.halt
  if (job.status !== 'halted' || !halt) return null
  return (
    <div role="alert" data-testid="halted-banner" className="rounded-md border border-red-200 bg-red-50 px-3 py-2 text-red-900">
      <div className="flex flex-wrap items-center gap-x-3 gap-y-1">
        <p className="min-w-0 flex-1">
          <span className="font-semibold">Halted {inStage(halt.stage)}</span> <RelativeTime iso={halt.decidedAt} />. {visibleText(haltText(halt))} Nothing more is
          published; the unpublished messages stay in the job and its entities stay paused.
        </p>
        {canAct && (
          <div className="flex gap-2">
            <Button variant="primary" onClick={() => resume.mutate()} disabled={resume.isPending}>
              {resume.isPending ? 'Resuming…' : 'Resume'}
            </Button>
            <Button variant="danger" onClick={onCancel} aria-haspopup="dialog">
              Cancel…
            </Button>
          </div>
        )}
      </div>
      {resume.error && <InlineError error={resume.error} />}
    </div>
  )
}

/** "after 3 s", or "within 1 s" rather than "after under 1 s". */
const backAfter = (seconds: number) => (seconds < 1 ? 'within 1 s' : `after ${formatDuration(seconds)}`)

type StageRefailures = NonNullable<ReplayRefailuresDto['stages']>

function Stages({ staging, status, refailures }: { staging: ReplayJobStagingDto; status: ReplayJobDetailDto['status']; refailures: StageRefailures | null }) {
  const live = status === 'running' || status === 'pending'
  return (
    <ol className="grid gap-px overflow-hidden rounded-md border border-zinc-200 bg-zinc-100" style={{ gridTemplateColumns: `repeat(${staging.stages.length}, minmax(0, 1fr))` }} aria-label="Stages">
      {staging.stages.map((s) => {
        const current = s.index === staging.current
        const done = s.index < staging.current || (current && status === 'completed')
        const state = done ? 'done' : current ? (status === 'halted' ? 'halted' : s.publishedAt ? 'observing' : live ? 'publishing' : status) : 'waiting'
        const tone: Tone = state === 'done' ? 'green' : state === 'halted' ? 'red' : state === 'observing' ? 'amber' : state === 'publishing' ? 'blue' : 'zinc'
        return (
          <li key={s.index} data-testid={`stage-${s.index}`} className={cn('min-w-0 bg-white px-3 py-2', current && 'bg-zinc-50')}>
            <div className="flex items-center justify-between gap-2">
              <span className="truncate text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">{stageName(s.index)}</span>
              <Badge tone={tone}>{state}</Badge>
            </div>
            <p className="mt-0.5 text-xs text-zinc-600 tabular-nums" title="Positions in the job's message list below">
              {plural(s.size, 'message')} · #{formatCount(s.throughSeq - s.size + 1)}–#{formatCount(s.throughSeq)}
            </p>
            {/* Always one line, so the cells keep their height while the job is polled. */}
            <p className="truncate text-xs text-zinc-500 tabular-nums" data-testid={`stage-${s.index}-refailed`}>
              {current && state === 'observing' && staging.nextStageAt ? (
                <>
                  {stageRefailed(refailures?.[s.index])} · next stage <RelativeTime iso={staging.nextStageAt} />
                </>
              ) : (
                stageRefailed(refailures?.[s.index])
              )}
            </p>
          </li>
        )
      })}
    </ol>
  )
}

function stageRefailed(s: StageRefailures[number] | undefined): string {
  if (!s || s.published === 0) return 'nothing published yet'
  return `${formatCount(s.refailed)} of ${formatCount(s.published)} failed again (${Math.round((s.refailed / s.published) * 1000) / 10} %)`
}

const CANARY_STATES: Record<ReplayCanaryItemDto['state'], { label: string; tone: Tone }> = {
  'failed-again': { label: 'failed again', tone: 'red' },
  'no-news': { label: 'no news yet', tone: 'zinc' },
  'window-passed': { label: 'window passed without failing', tone: 'green' },
  'not-published': { label: 'not published', tone: 'zinc' },
}

/** Re-failures, live: how many, in which group, how fast, per stage, and each canary message's state. */
function Refailures({ data }: { data: ReplayRefailuresDto }) {
  return (
    <div className="space-y-3">
      <p className="text-sm" data-testid="refailures-total">
        <span className="font-semibold tabular-nums">{formatCount(data.total)}</span> of the replayed messages failed again
        {data.within && (
          <span className="text-zinc-500">
            {' '}
            · came back{' '}
            {formatDuration(data.within.min) === formatDuration(data.within.max)
              ? backAfter(data.within.max)
              : `after ${formatDuration(data.within.min)} to ${formatDuration(data.within.max)} (median ${formatDuration(data.within.median)})`}
          </span>
        )}
        {data.counted !== data.total && <span className="text-zinc-500"> · {formatCount(data.counted)} since the last resume</span>}
      </p>
      {data.groups.length > 0 && (
        <div>
          <h3 className="mb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">Failed again, by error group</h3>
          <ul className="space-y-1" aria-label="Re-failures by group">
            {data.groups.map((g) => (
              <li key={g.id} className="flex items-center gap-2 text-xs">
                <span className="w-10 shrink-0 text-right font-medium tabular-nums">{formatCount(g.count)}</span>
                <Link href={`/groups/${encodeURIComponent(g.id)}`} className="min-w-0 truncate text-zinc-800 hover:text-brand hover:underline">
                  {visibleText(g.title)}
                </Link>
                {g.newGroup && <Badge tone="red" title="None of the replayed messages were in this group: a new failure">new group</Badge>}
              </li>
            ))}
          </ul>
        </div>
      )}
      {data.canary && data.canary.length > 0 && (
        <div>
          <h3 className="mb-1 text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">Canary messages</h3>
          <ul className="grid max-h-64 gap-x-4 overflow-auto sm:grid-cols-2" aria-label="Canary messages">
            {data.canary.map((c) => (
              <li key={c.seq} data-testid="canary-item" className="flex min-w-0 items-center gap-2 border-b border-zinc-100 py-1 text-xs">
                <span className="w-10 text-zinc-400 tabular-nums">#{c.seq}</span>
                <Link href={`/messages/${encodeURIComponent(c.messageId)}`} className="min-w-0 flex-1 truncate font-mono text-zinc-700 hover:text-brand hover:underline">
                  {c.entityKey ? visibleText(c.entityKey) : `message ${c.messageId}`}
                </Link>
                <Badge tone={CANARY_STATES[c.state].tone}>{CANARY_STATES[c.state].label}</Badge>
                {/* Always there, one line wide, so the badges line up and rows keep their height as copies come back. */}
                <span className="w-20 shrink-0 whitespace-nowrap text-zinc-500 tabular-nums">{c.failedAfterSeconds !== null ? backAfter(c.failedAfterSeconds) : ''}</span>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  )
}

/** A staged job's stages, window and threshold, and its re-failures. */
export function StagingPanel({ job }: { job: ReplayJobDetailDto }) {
  const live = job.status === 'running' || job.status === 'pending' || job.status === 'halted'
  const refailures = useReplayRefailures(job.id, { live: live && job.staging !== null })
  const staging = job.staging
  if (!staging) return null
  return (
    <Panel
      title="Stages and re-failures"
      actions={
        <span className="text-xs text-zinc-500" data-testid="staging-terms">
          {formatDuration(staging.windowSeconds)} window after each stage · halts at {staging.haltPercent} % failing again, at least {plural(staging.haltMinMessages, 'message')}
        </span>
      }
    >
      <div className="space-y-3">
        <Stages staging={staging} status={job.status} refailures={refailures.data?.stages ?? null} />
        {refailures.isPending ? (
          <Skeleton className="h-24 w-full" />
        ) : refailures.error || !refailures.data ? (
          <ErrorState title="Could not load the re-failures" error={refailures.error} onRetry={() => void refailures.refetch()} />
        ) : (
          <Refailures data={refailures.data} />
        )}
      </div>
    </Panel>
  )
}
