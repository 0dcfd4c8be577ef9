'use client'

import Link from 'next/link'
import { useEffect } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { formatCount, visibleText } from '@/lib/client/format'
import type { EffectiveSettingDto, FindingDto, SettingOrigin, TopologyNodeDto } from '@/lib/shared/schemas/topology'
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
            {node.type === 'queue' ? `${node.queueType} queue · ${node.role}` : `${node.exchangeType} exchange${node.internal ? ' · internal' : ''}`}
          </div>
          <h3 className="font-mono text-[12px] font-semibold break-all text-zinc-900">{visibleText(node.name) || '(default)'}</h3>
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
              <dl className="grid grid-cols-3 gap-x-2 gap-y-1 text-[11px]" data-testid="node-stats">
                {(
                  [
                    ['messages', formatCount(node.stats.messages)],
                    ['consumers', formatCount(node.stats.consumers)],
                    ['publish', rate(node.stats.publishRate)],
                    ['deliver', rate(node.stats.deliverRate)],
                    ['redeliver', rate(node.stats.redeliverRate)],
                    ['ack', rate(node.stats.ackRate)],
                  ] as const
                ).map(([label, v]) => (
                  <div key={label}>
                    <dt className="text-zinc-500">{label}</dt>
                    <dd className="font-medium text-zinc-900 tabular-nums">{v}</dd>
                  </div>
                ))}
              </dl>
            </section>
            {node.sourceId && (
              <p className="text-[11px]">
                Drained by a Lazarus source:{' '}
                <Link className="text-brand hover:underline" href={`/messages?source=${encodeURIComponent(node.sourceId)}`}>
                  its messages
                </Link>
                {' · '}
                <Link className="text-brand hover:underline" href={`/topology?source=${encodeURIComponent(node.sourceId)}`}>
                  its part of the graph
                </Link>
              </p>
            )}
          </>
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
