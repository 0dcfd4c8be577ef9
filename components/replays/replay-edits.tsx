'use client'

import Link from 'next/link'
import { useState } from 'react'
import { FieldChanges, StoredBodyDiff } from '@/components/messages/revision-diff'
import { Panel } from '@/components/ui/panel'
import { ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useReplayEdits } from '@/lib/client/use-replays'
import { useCan } from '@/lib/client/use-session'
import type { ReplayEditDto, ReplayJobDetailDto } from '@/lib/shared/schemas/replay'

/** Diffs open at first: enough for an approver to read without a click, few enough to keep the page short. */
const OPEN_AT_FIRST = 5

/**
 * "A pending job shows the diff of any edits" (issue 18): the messages the job sends as an edited revision, frozen
 * when it was created (docs/ARCHITECTURE.md#revisions), each with who edited it, when, and the diff against the
 * original. Diffs show raw bodies: operators only (messages:raw); a viewer sees the count.
 */
export function ReplayEdits({ job }: { job: ReplayJobDetailDto }) {
  const canRaw = useCan('messages:raw')
  const planned = job.plan.editedMessages ?? 0
  const applies = job.kind === 'replay'
  const { data, error, isPending, refetch } = useReplayEdits(job.id, applies && canRaw)
  const [open, setOpen] = useState<Set<string> | null>(null)
  if (!applies) return null
  if (!canRaw) {
    if (planned === 0) return null
    return (
      <p data-testid="replay-edits-note" className="rounded-md border border-zinc-200 bg-white px-3 py-2 text-xs text-zinc-700">
        This replay sends {plural(planned, 'edited message')} instead of the originals; their diffs are shown to operators.
      </p>
    )
  }
  if (isPending) {
    return planned > 0 ? (
      <Panel title="Edited messages">
        <p className="text-xs text-zinc-500">Loading the edits…</p>
      </Panel>
    ) : null
  }
  if (error || !data) {
    return (
      <Panel title="Edited messages">
        <ErrorState title="Could not load the edits of this replay" error={error} onRetry={() => void refetch()} />
      </Panel>
    )
  }
  if (data.total === 0) return null
  const opened = open ?? new Set(data.edits.slice(0, OPEN_AT_FIRST).map((e) => e.messageId))
  const toggle = (id: string) => {
    const next = new Set(opened)
    if (next.has(id)) next.delete(id)
    else next.add(id)
    setOpen(next)
  }
  const more = data.total - data.edits.length
  return (
    <Panel title={`Edited messages · ${formatCount(data.total)}`}>
      <p className="mb-2 text-xs text-zinc-600">
        {data.total === 1 ? 'This message goes out' : `These ${formatCount(data.total)} messages go out`} as the revision frozen when the replay was created, never as the original. Later edits are not part of this replay. Each diff is against the original.
      </p>
      <ol className="divide-y divide-zinc-100 border-t border-zinc-100" data-testid="replay-edits">
        {data.edits.map((edit) => (
          <EditRow key={edit.messageId} edit={edit} open={opened.has(edit.messageId)} onToggle={() => toggle(edit.messageId)} />
        ))}
      </ol>
      {more > 0 && (
        <p className="mt-2 text-xs text-zinc-500" data-testid="replay-edits-more">
          and {plural(more, 'more edited message')} (the first {formatCount(data.edits.length)} are shown; each message&apos;s page has its revisions)
        </p>
      )}
    </Panel>
  )
}

function EditRow({ edit, open, onToggle }: { edit: ReplayEditDto; open: boolean; onToggle: () => void }) {
  const diffId = `edit-diff-${edit.messageId}`
  return (
    <li className="py-1.5" data-message-id={edit.messageId}>
      <div className="flex min-w-0 flex-wrap items-center gap-x-2 gap-y-0.5 text-xs">
        <button type="button" className="w-4 shrink-0 text-zinc-500 hover:text-zinc-900" aria-expanded={open} aria-controls={diffId} aria-label={`${open ? 'Hide' : 'Show'} the diff of message ${edit.messageId}`} onClick={onToggle}>
          {open ? '▾' : '▸'}
        </button>
        <Link href={`/messages/${edit.messageId}`} className="font-mono text-brand hover:underline">
          #{edit.messageId}
        </Link>
        <span className="font-medium text-zinc-900">revision {edit.revision}</span>
        <span className="text-zinc-500">
          by <span className="text-zinc-700">{visibleText(edit.editedBy)}</span> <RelativeTime iso={edit.editedAt} /> (<AbsoluteTime iso={edit.editedAt} />)
        </span>
        <span className="min-w-0 flex-1 truncate text-zinc-700" title={visibleText(edit.summary)}>
          {visibleText(edit.summary)}
        </span>
      </div>
      {open && (
        <div id={diffId} className="mt-2 space-y-2 pl-6" data-testid="edit-diff">
          <StoredBodyDiff body={edit.diff.body} />
          <FieldChanges diff={edit.diff} />
        </div>
      )}
    </li>
  )
}
