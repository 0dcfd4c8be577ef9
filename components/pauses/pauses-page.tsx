'use client'

import Link from 'next/link'
import { useMemo, useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { ConfirmDialog } from '@/components/ui/dialog'
import { Checkbox } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useTimeFormat } from '@/lib/client/use-display-prefs'
import { usePauses, useResumePause } from '@/lib/client/use-pauses'
import { useSources } from '@/lib/client/use-sources'
import { useUrlState } from '@/lib/client/use-url-state'
import type { GuardCountsDto, PauseDto } from '@/lib/shared/schemas/pause'
import { GroupPauseForm } from './group-pause-form'
import { GuardCount } from './guard-count'
import { PauseForm } from './pause-form'
import { useCan } from '@/lib/client/use-session'

/** show=all; source, queue, entity: a "Pause this entity" link's prefill; group: pause a group's entities. */
const KEYS = ['show', 'source', 'queue', 'entity', 'group'] as const
const COLUMNS: DataColumn[] = [
  { header: 'Entity', width: 'w-[13%]' },
  { header: 'Queue ← source', width: 'w-[15%]' },
  { header: 'Guards', width: 'w-48', title: 'Guards listening on the queue (polled in the last two minutes), and how many of them are up to date' },
  { header: 'Status', width: 'w-20' },
  { header: 'Held', width: 'w-14', align: 'right' },
  { header: 'Why' },
  { header: 'Who', width: 'w-28' },
  { header: 'Since', width: 'w-20' },
  { header: 'Resumed', width: 'w-28' },
  { width: 'w-24' },
]

const STATUS_TONE = { active: 'amber', releasing: 'blue', resumed: 'green' } as const

function entityLabel(p: PauseDto) {
  return p.entityKey === null ? 'the whole queue' : visibleText(p.entityKey)
}

function ResumeDialog({ pause, onClose }: { pause: PauseDto; onClose: () => void }) {
  const resume = useResumePause()
  return (
    <ConfirmDialog
      title={`Resume ${entityLabel(pause)}?`}
      description={`on ${visibleText(pause.queue)}`}
      onClose={onClose}
      onConfirm={() => resume.mutate(pause.id, { onSuccess: onClose })}
      pending={resume.isPending}
      error={resume.error}
      keepLabel="Keep paused"
      confirmLabel="Resume"
      pendingLabel="Resuming…"
      tone="primary"
    >
      <p className="text-zinc-700">
        {pause.held > 0
          ? `${plural(pause.held, 'held message')} will be released first, in the order they arrived; then guards stop holding ${pause.entityKey === null ? 'this queue' : 'this entity'}.`
          : `No message is held. Guards stop holding ${pause.entityKey === null ? 'this queue' : 'this entity'} as soon as they hear of the resume.`}
      </p>
      {pause.replayJobId && (
        <p className="mt-2 text-xs text-zinc-500">
          Paused by replay{' '}
          <Link href={`/replays/${pause.replayJobId}`} className="text-brand hover:underline">
            #{pause.replayJobId}
          </Link>
          , which resumes it by itself when it ends.
        </p>
      )}
    </ConfirmDialog>
  )
}

function PauseRow({ pause, sourceQueue, guards, onResume }: { pause: PauseDto; sourceQueue: string | null; guards: GuardCountsDto | undefined; onResume: (p: PauseDto) => void }) {
  const time = useTimeFormat()
  const canPause = useCan('pauses:write')
  const entity = entityLabel(pause)
  const reason = pause.reason ? visibleText(pause.reason) : null
  return (
    <tr data-pause-id={pause.id} data-entity={pause.entityKey ?? ''} data-status={pause.status}>
      <td className="truncate font-mono text-xs" title={entity}>
        {pause.entityKey === null ? <Badge tone="violet">whole queue</Badge> : entity}
      </td>
      <td className="truncate font-mono text-xs text-zinc-700" title={`${pause.vhost} ${pause.queue}${sourceQueue ? ` (source ${sourceQueue})` : ''}`}>
        {pause.vhost !== '/' && <span className="text-zinc-400">{visibleText(pause.vhost)}/</span>}
        {visibleText(pause.queue)}
        {sourceQueue && <span className="ml-1.5 text-zinc-400">← {visibleText(sourceQueue)}</span>}
      </td>
      <td className="truncate">{pause.status === 'resumed' ? <span className="text-zinc-400">—</span> : <GuardCount counts={guards} compact />}</td>
      <td>
        <Badge tone={STATUS_TONE[pause.status] ?? 'zinc'}>{pause.status}</Badge>
      </td>
      <td className={cn('text-right tabular-nums', pause.held > 0 ? 'font-medium text-amber-700' : 'text-zinc-500')} data-testid="held">
        {formatCount(pause.held)}
      </td>
      <td className="truncate text-xs text-zinc-700" title={reason ?? undefined}>
        {reason ?? <span className="text-zinc-400">—</span>}
        {pause.replayJobId && (
          <Link href={`/replays/${pause.replayJobId}`} className="ml-1.5 text-brand hover:underline">
            replay #{pause.replayJobId}
          </Link>
        )}
      </td>
      <td className="truncate text-xs" title={visibleText(pause.createdBy)}>
        {visibleText(pause.createdBy)}
      </td>
      <td className="truncate text-xs text-zinc-600" title={time.title(pause.createdAt)}>
        <RelativeTime iso={pause.createdAt} />
      </td>
      <td className="truncate text-xs text-zinc-600" title={pause.resumedAt ? `${time.title(pause.resumedAt)}${pause.resumedBy ? ` by ${pause.resumedBy}` : ''}` : undefined}>
        {pause.resumedAt ? (
          <>
            <RelativeTime iso={pause.resumedAt} />
            {pause.resumedBy && <span className="text-zinc-400"> · {visibleText(pause.resumedBy)}</span>}
          </>
        ) : (
          '—'
        )}
      </td>
      <td className="text-right">
        {pause.status === 'active' && canPause ? (
          <Button variant="ghost" onClick={() => onResume(pause)} aria-label={`Resume ${entity}`} aria-haspopup="dialog">
            Resume
          </Button>
        ) : pause.status === 'releasing' ? (
          <span className="text-xs text-zinc-500">releasing…</span>
        ) : null}
      </td>
    </tr>
  )
}

/** Active pauses (and, on request, past ones) with who, why, since when and how many messages are held. */
export function PausesPage() {
  const { values, update } = useUrlState(KEYS)
  const showAll = values.show === 'all'
  const query = usePauses(showAll ? 'all' : 'active')
  const sources = useSources()
  const [resuming, setResuming] = useState<PauseDto | null>(null)
  const canPause = useCan('pauses:write')
  const sourceQueues = useMemo(() => new Map((sources.data?.sources ?? []).map((s) => [s.id, s.queue])), [sources.data])
  const guards = useMemo(() => new Map((query.data?.guards ?? []).map((g) => [`${g.vhost}\u0000${g.queue}`, g])), [query.data])
  const prefill = { sourceId: values.source ?? undefined, queue: values.queue ?? undefined, entityKey: values.entity ?? undefined }
  const pauses = query.data?.pauses ?? []
  const active = pauses.filter((p) => p.status !== 'resumed')
  const held = active.reduce((a, p) => a + p.held, 0)

  return (
    <div className="space-y-3">
      <div className="flex items-baseline justify-between gap-4">
        <h1 className="text-base font-semibold">Pauses</h1>
        <span className="text-xs text-zinc-500 tabular-nums" data-testid="pause-summary">
          {query.data ? `${plural(active.length, 'active pause')} · ${plural(held, 'message')} held · registry version ${formatCount(query.data.version)}` : '\u00a0'}
        </span>
      </div>

      {canPause && values.group && (
        <Panel title={`Pause the entities of group #${values.group}`}>
          <GroupPauseForm key={values.group} groupId={values.group} />
        </Panel>
      )}

      {canPause && (
      <Panel title="Pause an entity">
        <PauseForm key={JSON.stringify(prefill)} prefill={prefill} />
        <p className="mt-2 text-xs text-zinc-500">
          Guards (<code className="font-mono">@lazarus/guard</code>) in front of the queue&apos;s consumers park the entity&apos;s new messages on <code className="font-mono">lazarus.hold</code>{' '}
          instead of handling them; resuming releases them in arrival order. Replays of order-sensitive sources pause and resume entities on their own.
        </p>
      </Panel>
      )}

      <div className="flex items-center gap-3">
        <label className="flex items-center gap-1.5 text-xs text-zinc-700">
          <Checkbox checked={showAll} onChange={(e) => update({ show: e.target.checked ? 'all' : null }, 'replace')} />
          Show resumed pauses too
        </label>
        {query.isFetching && !query.isPending && <span className="text-xs text-zinc-400">updating…</span>}
      </div>

      {query.error && !query.data ? (
        <ErrorState title="Could not load pauses" error={query.error} onRetry={() => void query.refetch()} />
      ) : (
        <div className="overflow-hidden rounded-md border border-zinc-200 bg-white">
          <DataTable label="Pauses" columns={COLUMNS} pending={query.isPending} skeletonRows={3}>
            {pauses.map((p) => <PauseRow key={p.id} pause={p} sourceQueue={p.sourceId ? (sourceQueues.get(p.sourceId) ?? null) : null} guards={guards.get(`${p.vhost}\u0000${p.queue}`)} onResume={setResuming} />)}
          </DataTable>
          {!query.isPending && pauses.length === 0 && (
            <div className="p-4">
              <EmptyState title={showAll ? 'No pauses yet' : 'Nothing is paused'}>Every entity&apos;s messages flow to their consumers.</EmptyState>
            </div>
          )}
        </div>
      )}
      {resuming && <ResumeDialog pause={resuming} onClose={() => setResuming(null)} />}
    </div>
  )
}
