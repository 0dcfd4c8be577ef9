'use client'

import { Badge, type Tone } from '@/components/ui/badge'
import { visibleText } from '@/lib/client/format'
import type { PlanAction, PlanItemDto, TopologyPlanDto } from '@/lib/shared/topology/builder-api'

const ACTION_TONE: Record<PlanAction, Tone> = { create: 'green', unchanged: 'zinc', conflict: 'red' }

function objectName(item: PlanItemDto): string {
  const o = item.object
  if (o.kind === 'binding') return `${visibleText(o.source) || '(default)'} → ${visibleText(o.destination)}${o.routingKey ? ` (${visibleText(o.routingKey)})` : ''}`
  return visibleText(o.name)
}

function show(value: unknown): string {
  return value === undefined ? '(unset)' : JSON.stringify(value)
}

/** The dry run: every object the builder would declare, what applying it would do, and why. */
export function BuilderPlan({ plan }: { plan: TopologyPlanDto }) {
  return (
    <div>
      <p className="mb-2 text-[12px] text-zinc-700" data-testid="plan-summary">
        In vhost <span className="font-mono">{visibleText(plan.vhost)}</span>: {plan.counts.create} to create, {plan.counts.unchanged} already there,{' '}
        <span className={plan.counts.conflict > 0 ? 'font-medium text-red-700' : undefined}>{plan.counts.conflict} in conflict</span>.
        {plan.counts.conflict > 0 && ' The broker refuses to redeclare a queue or exchange with other settings: rename the topology, or change the existing objects first.'}
      </p>
      <table className="w-full table-fixed text-[12px]" aria-label="Dry run">
        <thead>
          <tr className="border-b border-zinc-200 text-left text-[10px] tracking-wide text-zinc-500 uppercase">
            <th className="w-20 py-1 font-semibold">Action</th>
            <th className="w-36 py-1 font-semibold">Kind</th>
            <th className="w-[34%] py-1 font-semibold">Object</th>
            <th className="py-1 font-semibold">Why</th>
          </tr>
        </thead>
        <tbody>
          {plan.items.map((item) => (
            <tr key={item.object.id} className="border-b border-zinc-100 align-top" data-action={item.action} data-object={item.object.kind === 'binding' ? item.object.id : item.object.name}>
              <td className="py-1">
                <Badge tone={ACTION_TONE[item.action]}>{item.action}</Badge>
              </td>
              <td className="py-1 pr-2 text-zinc-600">{item.object.kind === 'queue' ? `queue · ${item.object.role}` : item.object.kind === 'exchange' ? `exchange · ${item.object.exchangeType}` : 'binding'}</td>
              <td className="py-1 pr-2 font-mono text-[11px] break-words">{objectName(item)}</td>
              <td className="py-1 text-zinc-700">
                {item.object.purpose}
                {item.differences.length > 0 && (
                  <ul className="mt-0.5 text-red-700">
                    {item.differences.map((d) => (
                      <li key={d.field} className="font-mono text-[11px] break-all">
                        {d.field}: is {show(d.existing)}, wanted {show(d.wanted)}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
