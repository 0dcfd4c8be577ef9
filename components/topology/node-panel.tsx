'use client'

import Link from 'next/link'
import { useEffect } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { RelativeTime } from '@/components/ui/time'
import { formatBytes, formatCount, visibleText } from '@/lib/client/format'
import type { EffectiveSettingDto, FindingDto, JetStreamSettingDto, SettingOrigin, TopologyNodeDto } from '@/lib/shared/schemas/topology'
import { SEVERITY_TONE } from './findings-list'

function originLabel(from: SettingOrigin, policy?: string): string {
  if (from === 'policy') return `policy ${policy ?? ''}`.trim()
  if (from === 'operator-policy') return `operator policy ${policy ?? ''}`.trim()
  return from
}

function value(v: EffectiveSettingDto['value']): string {
  return v === null ? 'null' : String(v)
}

function rate(r: number | null): string {
  return r === null ? '—' : `${r < 10 ? r.toFixed(1) : Math.round(r)}/s`
}

function SettingsTable({ settings }: { settings: EffectiveSettingDto[] }) {
  if (settings.length === 0) return <p className="text-zinc-500">No optional arguments or policies apply: the broker’s defaults.</p>
  return (
    <table className="w-full table-fixed text-[11px]" data-testid="node-settings">
      <thead>
        <tr className="text-left text-[10px] tracking-wide text-zinc-500 uppercase">
          <th className="w-[40%] pb-1 font-semibold">Key</th>
          <th className="w-[28%] pb-1 font-semibold">Value</th>
          <th className="pb-1 font-semibold">From</th>
        </tr>
      </thead>
      <tbody>
        {settings.map((s) => (
          <tr key={s.key} className="border-t border-zinc-100 align-top" data-key={s.key}>
            <td className="py-0.5 pr-1 font-mono break-words">
              {s.key}
            </td>
            <td className="py-0.5 pr-1 font-mono break-words">
              <span className="text-zinc-900">{value(s.value)}</span>
              {s.overridden?.map((o, i) => (
                <span key={i} className="block text-zinc-400 line-through" title={`overridden: ${originLabel(o.from, o.policy)}`}>
                  {value(o.value)}
                </span>
              ))}
            </td>
            <td className="py-0.5 break-words text-zinc-600">
              {originLabel(s.from, s.policy)}
              {s.overridden?.map((o, i) => (
                <span key={i} className="block text-zinc-400 line-through">
                  {originLabel(o.from, o.policy)}
                </span>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

/** A JetStream stream's or consumer's configuration as the server answered it. */
function JetStreamSettings({ settings }: { settings: JetStreamSettingDto[] }) {
  return (
    <dl className="grid grid-cols-[max-content_minmax(0,1fr)] gap-x-3 gap-y-0.5 text-[11px]" data-testid="node-settings">
      {settings.map((st) => (
        <div key={st.key} className="contents" data-key={st.key}>
          <dt className="font-mono text-zinc-500">{st.key}</dt>
          <dd className="font-mono break-words text-zinc-900">{st.value}</dd>
        </div>
      ))}
    </dl>
  )
}

function Stats({ items }: { items: (readonly [string, string])[] }) {
  return (
    <dl className="grid grid-cols-3 gap-x-2 gap-y-1 text-[11px]" data-testid="node-stats">
      {items.map(([label, v]) => (
        <div key={label}>
          <dt className="text-zinc-500">{label}</dt>
          <dd className="font-medium text-zinc-900 tabular-nums">{v}</dd>
        </div>
      ))}
    </dl>
  )
}

const ms = (n: number) => (n < 1_000 ? `${Math.round(n)} ms` : `${(n / 1_000).toFixed(1)} s`)

function SourceLinks({ sourceId, what }: { sourceId: string; what: string }) {
  return (
    <p className="text-[11px]">
      {what}:{' '}
      <Link className="text-brand hover:underline" href={`/messages?source=${encodeURIComponent(sourceId)}`}>
        its messages
      </Link>
      {' · '}
      <Link className="text-brand hover:underline" href={`/topology?source=${encodeURIComponent(sourceId)}`}>
        its part of the graph
      </Link>
    </p>
  )
}

const HEADING = 'mb-1 text-[10px] font-semibold tracking-wide text-zinc-500 uppercase'

/** A consumer's sampled ack times, or why there are none. */
function AckTimes({ node }: { node: Extract<TopologyNodeDto, { type: 'consumer' }> }) {
  const acks = node.ackTimes
  const sampling = node.settings.find((st) => st.key === 'sample_freq')?.value ?? 'unset'
  return (
    <section data-testid="node-ack-times">
      <h4 className={HEADING}>Sampled ack times</h4>
      {acks ? (
        <>
          <Stats items={[['acks', formatCount(acks.samples)], ['p95', ms(acks.p95Ms)], ['max', ms(acks.maxMs)], ['p95 of deadline', `${Math.round(acks.p95Share * 100)}%`], ['on redelivery', formatCount(acks.onRedelivery)]]} />
          <p className="mt-1 text-[11px] text-zinc-600">
            Heard since <RelativeTime iso={acks.since} />
          </p>
        </>
      ) : (
        <p className="text-[11px] text-zinc-500">{sampling === 'unset' ? 'Not sampled: set sample_freq on the consumer for the doctor to judge its ack_wait.' : 'No sampled ack heard lately.'}</p>
      )}
    </section>
  )
}

function JetStreamBody({ node }: { node: Extract<TopologyNodeDto, { type: 'stream' | 'consumer' }> }) {
  const state: (readonly [string, string])[] =
    node.type === 'stream'
      ? [['messages', formatCount(node.stats.messages)], ['bytes', formatBytes(node.stats.bytes)], ['consumers', formatCount(node.stats.consumers)]]
      : [['pending', formatCount(node.stats.pending)], ['ack pending', formatCount(node.stats.ackPending)], ['redelivered', formatCount(node.stats.redelivered)]]
  return (
    <>
      <section>
        <h4 className={HEADING}>Configuration</h4>
        <JetStreamSettings settings={node.settings} />
      </section>
      <section>
        <h4 className={HEADING}>State</h4>
        <Stats items={state} />
        {node.type === 'stream' && node.stats.firstMessageAt && (
          <p className="mt-1 text-[11px] text-zinc-600">
            Oldest message stored <RelativeTime iso={node.stats.firstMessageAt} />
          </p>
        )}
      </section>
      {node.type === 'consumer' && <AckTimes node={node} />}
      {node.type === 'stream' && node.keepsAdvisories && <p className="text-[11px] text-zinc-700">Keeps consumers’ failure advisories{node.lazarus ? ': Lazarus created it for its capture.' : '.'}</p>}
      {node.type === 'consumer' && node.lazarus && <p className="text-[11px] text-zinc-700">Lazarus’ own capture consumer: it reads the advisories; no rule judges it.</p>}
      {node.sourceId && <SourceLinks sourceId={node.sourceId} what={node.type === 'stream' ? 'Every consumer captured by a Lazarus source' : 'Its failures are captured by a Lazarus source'} />}
    </>
  )
}

function kindLine(node: TopologyNodeDto): string {
  if (node.type === 'queue') return `${node.queueType} queue · ${node.role}`
  if (node.type === 'exchange') return `${node.exchangeType} exchange${node.internal ? ' · internal' : ''}`
  if (node.type === 'stream') return `JetStream stream · ${node.retention}${node.keepsAdvisories ? ' · keeps advisories' : ''}`
  return `JetStream consumer of ${node.stream}`
}

/** The selected node: its effective settings with where each came from, its rates, and the findings naming it. */
export function NodePanel({ node, findings, onClose, onFinding }: { node: TopologyNodeDto; findings: FindingDto[]; onClose: () => void; onFinding: (id: string) => void }) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape' && !event.defaultPrevented) onClose()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [onClose])
  return (
    <aside
      aria-label={`${node.type} ${node.name || '(default)'}`}
      data-testid="node-panel"
      className="absolute top-2 right-2 bottom-2 z-10 flex w-[300px] max-w-[calc(100%-1rem)] xl:w-[380px] flex-col overflow-hidden rounded-md border border-zinc-200 bg-white shadow-lg"
    >
      <header className="flex items-start gap-2 border-b border-zinc-100 px-3 py-2">
        <div className="min-w-0 flex-1">
          <div className="text-[10px] font-semibold tracking-wide text-zinc-500 uppercase">
            {kindLine(node)}
          </div>
          <h3 className="font-mono text-[12px] font-semibold break-all text-zinc-900">{visibleText(node.type === 'consumer' ? node.consumer : node.name) || '(default)'}</h3>
        </div>
        <Button variant="ghost" aria-label="Close" title="Close (Esc)" onClick={onClose}>
          ✕
        </Button>
      </header>
      <div className="min-h-0 flex-1 space-y-3 overflow-y-auto px-3 py-2">
        {findings.length > 0 && (
          <ul className="space-y-1">
            {findings.map((f) => (
              <li key={f.id}>
                <button type="button" onClick={() => onFinding(f.id)} className="flex w-full items-start gap-1.5 text-left text-[11px] hover:underline">
                  <Badge tone={SEVERITY_TONE[f.severity]} className="shrink-0">
                    {f.severity}
                  </Badge>
                  <span className="min-w-0 break-words text-zinc-800">{f.title}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {node.type === 'queue' ? (
          <>
            <section>
              <h4 className="mb-1 text-[10px] font-semibold tracking-wide text-zinc-500 uppercase">Effective settings</h4>
              <SettingsTable settings={node.settings} />
            </section>
            <section>
              <h4 className="mb-1 text-[10px] font-semibold tracking-wide text-zinc-500 uppercase">Stats</h4>
              <Stats
                items={[
                  ['messages', formatCount(node.stats.messages)],
                  ['consumers', formatCount(node.stats.consumers)],
                  ['publish', rate(node.stats.publishRate)],
                  ['deliver', rate(node.stats.deliverRate)],
                  ['redeliver', rate(node.stats.redeliverRate)],
                  ['ack', rate(node.stats.ackRate)],
                ]}
              />
            </section>
            {node.sourceId && <SourceLinks sourceId={node.sourceId} what="Drained by a Lazarus source" />}
          </>
        ) : node.type === 'stream' || node.type === 'consumer' ? (
          <JetStreamBody node={node} />
        ) : (
          <dl className="grid grid-cols-[max-content_minmax(0,1fr)] gap-x-3 gap-y-0.5 text-[11px]">
            <dt className="text-zinc-500">type</dt>
            <dd className="font-mono">{node.exchangeType}</dd>
            <dt className="text-zinc-500">alternate exchange</dt>
            <dd className="font-mono break-all">{node.alternateExchange ?? '—'}</dd>
            <dt className="text-zinc-500">internal</dt>
            <dd className="font-mono">{String(node.internal)}</dd>
          </dl>
        )}
      </div>
    </aside>
  )
}
