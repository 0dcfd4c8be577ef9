'use client'

import type { Dispatch } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Checkbox, Field, Input } from '@/components/ui/fields'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import type { ReplayPlanDto, ReplayPlanTargetDto } from '@/lib/shared/schemas/replay'
import { Section } from './plan-sections'
import { exchangeText } from './replay-format'
import type { PlanChoice, PlanChoices, TargetRefusal, TargetType } from './replay-plan-state'

const TARGETS: { type: TargetType; label: string; hint: string }[] = [
  { type: 'source', label: 'Source exchange', hint: 'the exchange each message was first published to, with its original routing key' },
  { type: 'queue', label: 'Failed queue only', hint: 'straight into the queue each message failed in (default exchange): no other consumer sees it' },
  { type: 'custom', label: 'Custom', hint: 'an exchange and routing key of your choice' },
]

/** The same choices in JetStream's words, for a plan whose every message is a JetStream one (docs/jetstream.md#replay). */
const JETSTREAM_TARGETS: Record<TargetType, { label: string; hint: string }> = {
  source: { label: 'Original subject', hint: 'the subject each message was read from, published through JetStream' },
  queue: { label: 'Failed queue only', hint: 'JetStream has no queue to aim at: the same as the original subject' },
  custom: { label: 'Custom', hint: 'a subject of your choice (on the allow-list); leave the exchange empty' },
}

function queuesText(t: ReplayPlanTargetDto): string {
  // A JetStream copy is stored by the stream that captures its subject, then read by its consumers (docs/jetstream.md#replay).
  if (t.broker === 'jetstream') {
    if (t.exists === false) return 'unroutable: no stream'
    if (t.queues === null) return 'unknown'
    return t.queues === 0 ? 'stored, no consumer' : plural(t.queues, 'consumer')
  }
  if (t.exists === false) return 'exchange missing'
  if (t.queues === null) return 'unknown'
  if (t.queues === 0) return t.exchange === '' ? 'unroutable: no such queue' : 'unroutable: nothing bound'
  return plural(t.queues, 'queue')
}

function jetStreamTitle(t: ReplayPlanTargetDto): string {
  if (!t.stream) return t.exists === false ? 'No stream captures this subject: its copies come back unroutable' : 'The NATS server could not be asked'
  return `Stream ${t.stream}${t.duplicateWindowSeconds != null ? `: drops a duplicate copy (same Nats-Msg-Id) for ${t.duplicateWindowSeconds} s` : ''}`
}

const TARGET_COLUMNS: DataColumn[] = [
  { header: 'Exchange / stream' },
  { header: 'Routing key / subject', width: 'w-[28%]' },
  { header: 'Messages', width: 'w-24', align: 'right' },
  { header: 'Reaches', width: 'w-[30%]' },
]

function TargetsTable({ targets }: { targets: ReplayPlanTargetDto[] }) {
  if (targets.length === 0) return <p className="text-zinc-500">Nothing to publish.</p>
  const shown = targets.slice(0, 8)
  return (
    <div className="overflow-hidden rounded-md border border-zinc-200">
      <DataTable label="Targets" columns={TARGET_COLUMNS}>
        {shown.map((t, i) => {
          const names = t.queueNames.map(visibleText)
          return (
            <tr key={`${t.exchange}|${t.routingKey}|${i}`} data-fans-out={t.fansOut || undefined}>
              <td className="truncate font-mono text-xs" title={t.broker === 'jetstream' ? jetStreamTitle(t) : exchangeText(t.exchange)}>
                {t.broker === 'jetstream' ? (
                  <>
                    <Badge tone="green" className="mr-1.5 font-sans">JetStream</Badge>
                    {t.stream ? visibleText(t.stream) : <span className="font-sans text-zinc-500">{t.exists === false ? 'no stream' : 'stream unknown'}</span>}
                  </>
                ) : (
                  exchangeText(t.exchange)
                )}
                {t.alternateExchange && <span className="ml-1 text-zinc-500" title="Alternate exchange: unroutable messages go there instead of being returned">(AE {visibleText(t.alternateExchange)})</span>}
              </td>
              <td className="truncate font-mono text-xs text-zinc-700" title={t.routingKey === null ? 'each message’s original routing key' : visibleText(t.routingKey)}>
                {t.routingKey === null ? <span className="font-sans text-zinc-500">{t.exchange === '' ? 'failed queue names' : 'original keys'}</span> : visibleText(t.routingKey) || <span className="font-sans text-zinc-500">(empty)</span>}
              </td>
              <td className="text-right tabular-nums">{formatCount(t.messages)}</td>
              <td className="truncate text-xs" title={names.join(', ')}>
                <span className={cn('font-medium tabular-nums', t.exists === false || t.queues === 0 ? 'text-red-700' : t.fansOut ? 'text-amber-700' : 'text-zinc-800')}>{queuesText(t)}</span>
                {names.length > 0 && <span className="ml-1.5 font-mono text-zinc-500">{names.slice(0, 2).join(', ')}{names.length > 2 ? ` +${names.length - 2}` : ''}</span>}
                {t.fansOut && (
                  <Badge tone="amber" className="ml-1.5">
                    fan-out
                  </Badge>
                )}
              </td>
            </tr>
          )
        })}
      </DataTable>
      {targets.length > shown.length && <p className="border-t border-zinc-100 px-2 py-1 text-xs text-zinc-500">+{targets.length - shown.length} more targets</p>}
    </div>
  )
}

function TargetRefused({ refusal }: { refusal: TargetRefusal }) {
  return (
    <div role="alert" data-testid="target-refused" className="mt-2 rounded-md border border-red-200 bg-red-50 px-3 py-2 text-red-900">
      <p>
        <strong className="font-medium">Target refused.</strong> {visibleText(refusal.message)}
      </p>
      {refusal.allowedPatterns && refusal.allowedPatterns.length > 0 && (
        <p className="mt-1 text-xs">
          Allowed exchanges: <span className="font-mono">{refusal.allowedPatterns.map(visibleText).join(', ')}</span>
        </p>
      )}
    </div>
  )
}

type TargetSectionProps = {
  plan: ReplayPlanDto
  choices: PlanChoices
  choose: Dispatch<PlanChoice>
  /** The target shown as chosen: the operator's, else the plan's. */
  effectiveType: TargetType
  onTarget: (type: TargetType) => void
  refusal: TargetRefusal | null
  /** A re-plan is under way: an earlier refusal is not shown meanwhile. */
  fetching: boolean
}

/** The plan's "Target" section: where the messages go, what each target reaches, a refusal, and a fan-out to decide. */
export function TargetSection({ plan, choices, choose, effectiveType, onTarget, refusal, fetching }: TargetSectionProps) {
  const fanOut = plan.targets.filter((t) => t.fansOut)
  const jetStreamOnly = plan.targets.length > 0 && plan.targets.every((t) => t.broker === 'jetstream')
  const targets = jetStreamOnly ? TARGETS.map((t) => ({ ...t, ...JETSTREAM_TARGETS[t.type] })) : TARGETS
  return (
    <Section title="Target" label="Target">
      <div role="radiogroup" aria-label="Replay target" className="grid grid-cols-3 gap-2">
        {targets.map((t) => (
          <label
            key={t.type}
            className={cn(
              'flex cursor-pointer gap-2 rounded-md border px-2.5 py-2',
              effectiveType === t.type ? 'border-brand bg-brand/[0.04] ring-1 ring-brand/30' : 'border-zinc-200 hover:border-zinc-300',
            )}
          >
            <input
              type="radio"
              name="replay-target"
              className="mt-0.5 accent-brand"
              checked={effectiveType === t.type}
              onChange={() => onTarget(t.type)}
              aria-label={t.label}
              aria-describedby={`replay-target-${t.type}-hint`}
            />
            <span className="min-w-0">
              <span className="block font-medium">{t.label}</span>
              <span id={`replay-target-${t.type}-hint`} className="block text-xs leading-4 text-zinc-500">
                {t.hint}
              </span>
            </span>
          </label>
        ))}
      </div>
      {effectiveType === 'custom' && (
        <div className="mt-2 grid grid-cols-2 gap-2">
          <Field label="Exchange" hint="empty: the default exchange (the routing key is then a queue name)">
            <Input value={choices.exchange} onChange={(e) => choose({ type: 'custom-target', exchange: e.target.value })} maxLength={255} placeholder="orders" autoComplete="off" aria-label="Custom exchange" />
          </Field>
          <Field label={jetStreamOnly ? 'Subject' : 'Routing key'}>
            <Input value={choices.routingKey} onChange={(e) => choose({ type: 'custom-target', routingKey: e.target.value })} maxLength={255} placeholder="order.created" autoComplete="off" aria-label="Custom routing key" />
          </Field>
        </div>
      )}
      {refusal && !fetching && <TargetRefused refusal={refusal} />}
      <div className="mt-2">
        <TargetsTable targets={plan.targets} />
      </div>
      {fanOut.length > 0 && (
        <div data-testid="fan-out-warning" className="mt-2 rounded-md border border-amber-300 bg-amber-50/60 px-3 py-2 text-amber-950">
          <p>
            <strong className="font-medium">Fan-out.</strong> Every consumer of{' '}
            <span className="font-mono text-xs">{[...new Set(fanOut.flatMap((t) => t.queueNames))].slice(0, 6).map(visibleText).join(', ')}</span> would
            receive these messages, not only the one that failed. Choose:
          </p>
          <div className="mt-2 flex flex-wrap items-center gap-3">
            <Button onClick={() => onTarget('queue')}>Replay to the failed queue only</Button>
            <label className="flex items-center gap-1.5 text-xs">
              <Checkbox checked={choices.allowFanOut} onChange={(e) => choose({ type: 'allow-fan-out', allow: e.target.checked })} />
              Deliver to every bound queue anyway
            </label>
          </div>
        </div>
      )}
    </Section>
  )
}
