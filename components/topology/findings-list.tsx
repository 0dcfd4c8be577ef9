'use client'

import Link from 'next/link'
import { useRef, useState, type KeyboardEvent } from 'react'
import { Badge, type Tone } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { Input } from '@/components/ui/fields'
import { InlineError } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { visibleText } from '@/lib/client/format'
import { useAcknowledgeFinding } from '@/lib/client/use-topology'
import type { FindingDto, FindingSeverity, TopologyObjectRef } from '@/lib/shared/schemas/topology'

export const SEVERITY_TONE: Record<FindingSeverity, Tone> = { error: 'red', warning: 'amber', info: 'sky' }

const ID_PREFIX: Record<TopologyObjectRef['type'], string | null> = { queue: 'q', exchange: 'x', stream: 's', consumer: 'c', policy: null }

/** A finding's object as a graph node id (`q:`, `x:`, and JetStream's `s:` / `c:`); policies are not drawn. */
export function nodeIdOf(ref: TopologyObjectRef): string | null {
  const prefix = ID_PREFIX[ref.type]
  return prefix === null ? null : `${prefix}:${ref.name}`
}

function AcknowledgeForm({ finding }: { finding: FindingDto }) {
  const [reason, setReason] = useState('')
  const acknowledge = useAcknowledgeFinding()
  const valid = reason.trim().length >= 3
  return (
    <form
      className="mt-2 flex items-start gap-1.5"
      onSubmit={(event) => {
        event.preventDefault()
        if (valid) acknowledge.mutate({ id: finding.id, reason: reason.trim() }, { onSuccess: () => setReason('') })
      }}
    >
      <div className="min-w-0 flex-1">
        <Input
          aria-label="Reason for acknowledging"
          placeholder="Why this is known and accepted"
          value={reason}
          maxLength={500}
          onChange={(e) => setReason(e.target.value)}
          onKeyDown={(e) => e.stopPropagation()}
          className="w-full"
        />
        {acknowledge.error ? (
          <p className="mt-0.5 text-xs">
            <InlineError error={acknowledge.error} />
          </p>
        ) : null}
      </div>
      <Button type="submit" disabled={!valid || acknowledge.isPending}>
        {acknowledge.isPending ? 'Acknowledging…' : 'Acknowledge'}
      </Button>
    </form>
  )
}

function FindingDetail({ finding, canAcknowledge, onObject, onGraph }: { finding: FindingDto; canAcknowledge: boolean; onObject: (ref: TopologyObjectRef) => void; onGraph: (id: string) => boolean }) {
  return (
    <div className="space-y-2 border-t border-zinc-100 bg-zinc-50/60 px-3 py-2 text-[12px]" data-testid="finding-detail">
      <div>
        <div className="text-[10px] font-semibold tracking-wide text-zinc-500 uppercase">Why</div>
        <p className="text-zinc-800">{finding.why}</p>
      </div>
      <div>
        <div className="text-[10px] font-semibold tracking-wide text-zinc-500 uppercase">Fix</div>
        <p className="text-zinc-800">{finding.fix}</p>
      </div>
      {finding.evidence.length > 0 && (
        <dl className="grid grid-cols-[max-content_minmax(0,1fr)] gap-x-3 gap-y-0.5">
          {finding.evidence.map((e, i) => (
            <div key={i} className="contents">
              <dt className="text-zinc-500">{e.label}</dt>
              <dd className="font-mono text-[11px] break-words text-zinc-800">{e.value}</dd>
            </div>
          ))}
        </dl>
      )}
      {finding.cycle && finding.cycle.length > 0 && (
        <p className="font-mono text-[11px] text-zinc-700" aria-label="cycle">
          {[...finding.cycle, finding.cycle[0]].map((id) => id.replace(/^[qx]:/, '') || '(default)').join(' → ')}
        </p>
      )}
      <div className="flex flex-wrap items-center gap-1">
        {finding.objects.map((ref) => {
          const id = nodeIdOf(ref)
          const label = `${ref.type} ${visibleText(ref.name) || '(default)'}`
          return id && onGraph(id) ? (
            <button
              key={`${ref.type}:${ref.name}`}
              type="button"
              onClick={() => onObject(ref)}
              className="rounded border border-zinc-300 bg-white px-1.5 py-0.5 font-mono text-[11px] text-brand hover:border-brand"
              title="Select and centre it on the graph"
            >
              {label}
            </button>
          ) : (
            <span
              key={`${ref.type}:${ref.name}`}
              className="rounded border border-dashed border-zinc-300 px-1.5 py-0.5 font-mono text-[11px] text-zinc-600"
              title={ref.type === 'policy' ? 'A policy: not drawn on the graph' : 'Not on the broker (or not in this view)'}
            >
              {label}
            </span>
          )
        })}
        {finding.messagesQuery && (
          <Link href={`/messages?${finding.messagesQuery}`} className="ml-auto text-brand hover:underline">
            Stored messages →
          </Link>
        )}
      </div>
      <p className="text-[11px] text-zinc-500">
        First seen <RelativeTime iso={finding.firstSeenAt} />, last seen <RelativeTime iso={finding.lastSeenAt} />
        {finding.resolvedAt && (
          <>
            , resolved <RelativeTime iso={finding.resolvedAt} />
          </>
        )}
      </p>
      {finding.acknowledged ? (
        <p className="text-[11px] text-zinc-600" data-testid="finding-acknowledged">
          Acknowledged by <span className="font-medium">{finding.acknowledged.by}</span> <RelativeTime iso={finding.acknowledged.at} />: “{finding.acknowledged.reason}”
        </p>
      ) : (
        canAcknowledge && !finding.resolvedAt && <AcknowledgeForm finding={finding} />
      )}
    </div>
  )
}

export type FindingsListProps = {
  findings: FindingDto[]
  expandedId: string | null
  onExpand: (id: string | null) => void
  canAcknowledge: boolean
  onObject: (ref: TopologyObjectRef) => void
  /** Whether a node id is in the graph (a missing DLX is named by a finding but is not on the broker). */
  onGraph: (id: string) => boolean
}

/**
 * The findings, worst first. Up/Down (or j/k) move between them, Enter or Space opens one, Escape closes it; opening
 * a finding stresses its objects on the graph.
 */
export function FindingsList({ findings, expandedId, onExpand, canAcknowledge, onObject, onGraph }: FindingsListProps) {
  const buttons = useRef<(HTMLButtonElement | null)[]>([])
  const onKeyDown = (event: KeyboardEvent<HTMLButtonElement>, index: number) => {
    const move = event.key === 'ArrowDown' || event.key === 'j' ? 1 : event.key === 'ArrowUp' || event.key === 'k' ? -1 : 0
    if (move) {
      event.preventDefault()
      buttons.current[Math.min(findings.length - 1, Math.max(0, index + move))]?.focus()
    } else if (event.key === 'Escape' && expandedId) {
      event.preventDefault()
      onExpand(null)
    }
  }
  return (
    <ul className="divide-y divide-zinc-100" aria-label="Findings" data-testid="findings-list">
      {findings.map((f, index) => {
        const open = f.id === expandedId
        return (
          <li key={f.id} data-finding-id={f.id} data-kind={f.kind} data-severity={f.severity} className={cn(f.acknowledged && 'opacity-75')}>
            <button
              ref={(el) => {
                buttons.current[index] = el
              }}
              type="button"
              aria-expanded={open}
              onClick={() => onExpand(open ? null : f.id)}
              onKeyDown={(e) => onKeyDown(e, index)}
              className={cn('flex w-full items-start gap-2 px-3 py-1.5 text-left hover:bg-zinc-50 focus-visible:bg-zinc-50 focus-visible:outline-none', open && 'bg-zinc-50')}
            >
              <Badge tone={SEVERITY_TONE[f.severity]} className="mt-px w-14 shrink-0 justify-center">
                {f.severity}
              </Badge>
              <span className="min-w-0 flex-1">
                <span className="block text-[12px] break-words text-zinc-900">{f.title}</span>
                <span className="block text-[10px] text-zinc-500">
                  {f.kind}
                  {f.acknowledged && ' · acknowledged'}
                  {f.resolvedAt && ' · resolved'}
                </span>
              </span>
              <span aria-hidden className="shrink-0 text-zinc-400">
                {open ? '▾' : '▸'}
              </span>
            </button>
            {open && <FindingDetail finding={f} canAcknowledge={canAcknowledge} onObject={onObject} onGraph={onGraph} />}
          </li>
        )
      })}
    </ul>
  )
}
