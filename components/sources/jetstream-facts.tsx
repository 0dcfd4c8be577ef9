'use client'

import type { ReactNode } from 'react'
import { formatCount, visibleText } from '@/lib/client/format'
import type { JetStreamFactsDto, JetStreamSourceFactsDto, SourceDto } from '@/lib/shared/schemas/source'

/** What a stream's retention leaves of a terminated (+TERM) message to capture (docs/jetstream.md#what-is-stored). */
const RETENTION: Record<NonNullable<JetStreamSourceFactsDto['retention']>, { label: string; terminated: string }> = {
  limits: { label: 'limits', terminated: 'a terminated message stays until the limits remove it: captured whole' },
  workqueue: { label: 'work queue', terminated: 'a terminated message is removed at once: recorded as gone; max-delivered ones stay' },
  interest: { label: 'interest', terminated: 'a terminated message goes once every consumer is done with it: usually recorded as gone; max-delivered ones stay' },
}

function captureText(capture: JetStreamSourceFactsDto['capture'], consumer: string): string {
  if (capture.mode === 'none') return capture.problem
  if (capture.mode === 'own-wide') return 'Lazarus\u2019 own stream, on every stream\u2019s advisories'
  if (capture.mode === 'own-narrow') return 'Lazarus\u2019 own stream, narrowed to the streams no team\u2019s stream keeps'
  return `the team\u2019s own stream, read by Lazarus\u2019 consumer ${consumer}`
}

function Fact({ label, title, children }: { label: string; title?: string; children: ReactNode }) {
  return (
    <span className="min-w-0" title={title}>
      <span className="text-zinc-500">{label} </span>
      {children}
    </span>
  )
}

/**
 * A JetStream source's facts under its row: where its advisories are kept and how the capture reads them, how many
 * wait for capture, what its stream's retention does to a terminated message, and whether removal is on. NATS
 * unreachable is said in the same place, calmly: the rest of the page does not depend on it.
 */
export function JetStreamFacts({ source, facts, asking }: { source: SourceDto; facts: JetStreamFactsDto | undefined; asking: boolean }) {
  const mine = facts?.sources.find((f) => f.sourceId === source.id)
  const stream = visibleText(source.stream ?? '')
  const removal = (
    <Fact label="Removal" title={source.removeAfterCapture ? `Each captured message is deleted from ${stream} once stored` : `Captured messages stay in ${stream} until its limits remove them`}>
      {source.removeAfterCapture ? <span className="font-medium text-amber-800">on: deleted from the stream once stored</span> : <span className="text-zinc-700">off</span>}
    </Fact>
  )
  if (!mine) {
    return (
      <div className="flex flex-wrap gap-x-5 gap-y-0.5 text-xs" data-testid="jetstream-facts">
        <span className="text-zinc-500">{facts?.natsError ? `NATS facts unavailable: ${visibleText(facts.natsError)}` : asking ? 'asking NATS\u2026' : 'NATS facts unavailable'}</span>
        {removal}
      </div>
    )
  }
  const { capture, pending, retention } = mine
  return (
    <div className="flex flex-wrap gap-x-5 gap-y-0.5 text-xs" data-testid="jetstream-facts">
      <Fact label="Advisories" title={captureText(capture, facts!.consumer)}>
        {capture.mode === 'none' ? (
          <span className="text-amber-800">{visibleText(capture.problem)}</span>
        ) : (
          <>
            <span className="font-mono text-zinc-800">{visibleText(capture.advisoryStream)}</span>
            <span className="text-zinc-500"> ({captureText(capture, visibleText(facts!.consumer))})</span>
          </>
        )}
      </Fact>
      {capture.mode !== 'none' && (
        <Fact label="Waiting for capture" title={`Advisories Lazarus' consumer has not yet acknowledged in ${capture.advisoryStream}, for every source read from it: not yet delivered, and delivered but not yet stored`}>
          <span className="font-medium text-zinc-800 tabular-nums">{pending ? formatCount(pending.waiting + pending.unacked) : '—'}</span>
          {pending && pending.unacked > 0 && <span className="text-zinc-500"> ({formatCount(pending.unacked)} being stored)</span>}
          {!pending && <span className="text-zinc-500"> (no consumer yet)</span>}
        </Fact>
      )}
      <Fact label="Retention" title={retention ? RETENTION[retention].terminated : undefined}>
        {retention ? (
          <>
            <span className="text-zinc-800">{RETENTION[retention].label}</span>
            <span className="text-zinc-500">: {RETENTION[retention].terminated}</span>
          </>
        ) : capture.mode === 'none' && capture.problem === mine.problem ? (
          <span className="text-zinc-400">—</span>
        ) : (
          <span className="text-amber-800">{visibleText(mine.problem ?? 'unknown')}</span>
        )}
      </Fact>
      {removal}
    </div>
  )
}
