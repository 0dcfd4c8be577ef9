'use client'

import Link from 'next/link'
import { useState } from 'react'
import { Badge } from '@/components/ui/badge'
import { ErrorState } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import { useRevisions } from '@/lib/client/use-revisions'
import { FieldChanges, StoredBodyDiff } from './revision-diff'

/**
 * The message's revisions, newest first: who, when, what changed (each one's diff against the one before), which one
 * the next replay sends, and which one each open replay froze (docs/ARCHITECTURE.md#revisions).
 */
export function RevisionHistory({ id }: { id: string }) {
  const { data, error, isPending, refetch } = useRevisions(id)
  const [open, setOpen] = useState<number | null>(null)
  if (isPending) return <p className="text-xs text-zinc-500">Loading revisions…</p>
  if (error || !data) return <ErrorState title="Could not load the revisions" error={error} onRetry={() => void refetch()} />
  if (data.revisions.length === 0) return <p className="text-xs text-zinc-500">Never edited: a replay sends the original message.</p>
  const newest = data.revisions[0].revision
  const frozen = new Map<number, string[]>()
  for (const p of data.pendingReplays) if (p.revision !== null) frozen.set(p.revision, [...(frozen.get(p.revision) ?? []), p.jobId])
  return (
    <ol className="divide-y divide-zinc-100" data-testid="revision-history">
      {data.revisions.map((r) => (
        <li key={r.revision} className="py-1.5">
          <div className="flex flex-wrap items-center gap-2 text-xs">
            <button type="button" className="font-medium text-zinc-900 hover:underline" aria-expanded={open === r.revision} onClick={() => setOpen(open === r.revision ? null : r.revision)}>
              Revision {r.revision}
            </button>
            {r.revision === newest && <Badge tone="blue">next replay sends this</Badge>}
            {(frozen.get(r.revision) ?? []).map((job) => (
              <Link key={job} href={`/replays/${job}`} className="hover:underline">
                <Badge tone="amber">replay #{job} sends this</Badge>
              </Link>
            ))}
            {r.bulkId && <Badge tone="violet">bulk edit</Badge>}
            <span className="text-zinc-500">
              by {visibleText(r.createdBy)} <RelativeTime iso={r.createdAt} /> (<AbsoluteTime iso={r.createdAt} />)
            </span>
            <span className="min-w-0 flex-1 truncate text-zinc-700">{visibleText(r.summary)}</span>
          </div>
          {open === r.revision && (
            <div className="mt-2 space-y-2">
              <StoredBodyDiff body={r.diff.body} />
              <FieldChanges diff={r.diff} />
            </div>
          )}
        </li>
      ))}
    </ol>
  )
}
