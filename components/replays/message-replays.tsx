'use client'

import Link from 'next/link'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { AbsoluteTime } from '@/components/ui/time'
import { visibleText } from '@/lib/client/format'
import type { MessageReplayDto, ReplayedFromDto } from '@/lib/shared/schemas/replay'
import { ItemStatusBadge, PublishedTo, publishedToText } from './replay-format'
import { cn } from '@/lib/client/cn'

/** "Failed again after replay": this copy died again; it links to the copy it was replayed from. */
export function FailedAgainNotice({ failedAgain }: { failedAgain: ReplayedFromDto }) {
  return (
    <p role="note" data-testid="failed-again" className="rounded-md border border-amber-200 bg-amber-50 px-3 py-1.5 text-amber-950">
      <strong className="font-medium">Failed again after replay.</strong> This is a replayed copy of{' '}
      <Link href={`/messages/${failedAgain.messageId}`} className="font-mono underline underline-offset-2 hover:no-underline">
        message #{failedAgain.messageId}
      </Link>
      {failedAgain.jobId && (
        <>
          {' '}
          by replay{' '}
          <Link href={`/replays/${failedAgain.jobId}`} className="font-mono underline underline-offset-2 hover:no-underline">
            #{failedAgain.jobId}
          </Link>
        </>
      )}
      .
    </p>
  )
}

type ReplayedFacts = { status: string; statusChangedBy: string | null; statusChangedAt: string | null; replays: MessageReplayDto[]; lineage: { originId: string | null; replayCount: number } }

/**
 * The message detail's "Replayed" field, from the same facts as its status banner and its replay history: who replayed
 * it, when, and in which job (the last replay the broker confirmed), or the job it is in now; for a replayed copy,
 * how often its lineage was replayed before. A dash when it never was.
 */
export function ReplayedField({ message: m }: { message: ReplayedFacts }) {
  const replays = m.replays.filter((r) => r.kind === 'replay')
  const confirmed = replays.findLast((r) => r.status === 'confirmed')
  const current = m.status === 'replaying' ? replays.findLast((r) => r.status === 'pending' || r.status === 'in_flight') : undefined
  const shown = current ?? confirmed
  const lineage = m.lineage.replayCount ? `copy replayed ${m.lineage.replayCount} time${m.lineage.replayCount === 1 ? '' : 's'}${m.lineage.originId ? ` (origin ${visibleText(m.lineage.originId)})` : ''}` : null
  if (!shown) {
    const tried = replays.at(-1)
    if (!tried && !lineage) return <span className="text-zinc-400">—</span>
    return (
      <span data-testid="replayed-field">
        {tried ? `not replayed: ${tried.status.replace('_', ' ')} in ` : lineage}
        {tried && (
          <Link href={`/replays/${tried.jobId}`} className="hover:underline">
            #{tried.jobId}
          </Link>
        )}
        {tried && lineage && ` · ${lineage}`}
      </span>
    )
  }
  // The banner's actor and time when they describe this replay; else the job's.
  const by = m.status === 'replayed' && !current && m.statusChangedBy ? m.statusChangedBy : shown.createdBy
  const at = current ? shown.createdAt : (m.status === 'replayed' && m.statusChangedAt) || shown.finishedAt || shown.createdAt
  return (
    <span data-testid="replayed-field">
      {current ? 'replaying now in ' : ''}
      <Link href={`/replays/${shown.jobId}`} className="hover:underline">
        replay #{shown.jobId}
      </Link>{' '}
      {/* The field breaks anywhere (hostile text): never inside the time. */}
      by {visibleText(by)} · <AbsoluteTime iso={at} className="whitespace-nowrap" />
      {lineage && ` · ${lineage}`}
    </span>
  )
}

const COLUMNS: DataColumn[] = [
  { header: 'Job', width: 'w-28' },
  { header: 'Outcome', width: 'w-28' },
  // A time with its zone, never cut.
  { header: 'When', width: 'w-56' },
  { header: 'By', width: 'w-44' },
  { header: 'Published to', width: 'w-[26%]' },
  { header: 'Error' },
]

/** The replays (and releases) this message took part in, oldest first as the API lists them. */
export function MessageReplays({ replays }: { replays: MessageReplayDto[] }) {
  if (replays.length === 0) return <p className="text-zinc-500">Never replayed.</p>
  return (
    <DataTable label="Replay history" columns={COLUMNS}>
      {replays.map((r, i) => {
        const to = publishedToText(r.exchange, r.routingKey)
        return (
          <tr key={`${r.jobId}-${r.replayId}-${i}`} data-job-id={r.jobId} data-status={r.status}>
            <td className="font-mono text-xs">
              <Link href={`/replays/${r.jobId}`} className="text-brand hover:underline">
                #{r.jobId}
              </Link>
              {r.kind === 'release' && <span className="ml-1 text-zinc-500">release</span>}
            </td>
            <td>
              <ItemStatusBadge status={r.status} />
            </td>
            <td className="truncate text-xs text-zinc-600 tabular-nums" data-column="when">
              <AbsoluteTime iso={r.finishedAt ?? r.publishedAt ?? r.createdAt} />
            </td>
            <td className="truncate text-xs" title={visibleText(r.createdBy)}>
              {visibleText(r.createdBy)}
            </td>
            <td className="truncate font-mono text-xs text-zinc-700" title={to}>
              <PublishedTo exchange={r.exchange} routingKey={r.routingKey} />
            </td>
            <td className={cn('truncate text-xs', r.error ? 'text-red-700' : 'text-violet-800')} title={r.error ? visibleText(r.error) : r.supersededNote ? visibleText(r.supersededNote) : undefined}>
              {r.error ? visibleText(r.error) : r.supersededNote ? visibleText(r.supersededNote) : <span className="text-zinc-400">—</span>}
            </td>
          </tr>
        )
      })}
    </DataTable>
  )
}
