'use client'

import type { Dispatch } from 'react'
import { Badge } from '@/components/ui/badge'
import { Checkbox, Field, Input } from '@/components/ui/fields'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import type { ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { Section } from './plan-sections'
import { MAX_RATE, type PlanChoice, type PlanChoices } from './replay-plan-state'

/*
 * The replay plan dialog's sections after the target (replay-plan-dialog.tsx): how fast and with which entities
 * paused, when it starts, and what must happen before it may: a second operator's approval, the count typed.
 */

type ChoiceProps = { plan: ReplayPlanDto; choices: PlanChoices; choose: Dispatch<PlanChoice> }

/** The plan's "Delivery" section: the rate, pausing the entities first, and the sources with their entities. */
export function DeliverySection({ plan, choices, choose, rateInvalid }: ChoiceProps & { rateInvalid: boolean }) {
  return (
    <Section title="Delivery" label="Delivery">
      <div className="flex items-start gap-6">
        <Field label="Rate (messages/s)" error={rateInvalid ? `a whole number from 1 to ${formatCount(MAX_RATE)}` : undefined} className="w-48">
          <Input
            inputMode="numeric"
            value={choices.rateText ?? String(plan.ratePerSecond)}
            onChange={(e) => choose({ type: 'rate', text: e.target.value })}
            invalid={rateInvalid}
            aria-label="Rate per second"
          />
        </Field>
        <div className="min-w-0 flex-1 pt-[19px]">
          <label className="flex items-center gap-2">
            <Checkbox checked={choices.pauseEntities ?? plan.pauseEntities} onChange={(e) => choose({ type: 'pause-entities', pause: e.target.checked })} aria-describedby="pause-entities-hint" />
            <span className="font-medium">Pause entities first</span>
            {plan.entities.orderSensitive > 0 && <Badge tone="violet">order-sensitive</Badge>}
          </label>
          <p id="pause-entities-hint" className="mt-0.5 text-xs text-zinc-500">
            {plan.entities.count === 0
              ? 'These messages carry no entity keys: nothing to pause.'
              : `${plural(plan.entities.count, 'entity', 'entities')}${plan.entities.orderSensitive ? `, ${formatCount(plan.entities.orderSensitive)} on order-sensitive sources` : ''}. Their new messages are held while the old ones replay, then released in order.`}
          </p>
          <label className="mt-2 flex items-center gap-2">
            <Checkbox checked={choices.newTrace} onChange={(e) => choose({ type: 'new-trace', newTrace: e.target.checked })} aria-describedby="new-trace-hint" />
            <span className="font-medium">Start a new trace</span>
          </label>
          <p id="new-trace-hint" className="mt-0.5 text-xs text-zinc-500">
            {choices.newTrace
              ? 'Each copy gets a fresh traceparent; its old trace headers are dropped.'
              : 'Each copy keeps its traceparent.'}{' '}
            Either way it carries <code>x-lazarus-origin-trace</code>, the trace it failed in.
          </p>
        </div>
      </div>
      {plan.entities.sources.length > 0 && (
        <ul className="mt-2 space-y-0.5 text-xs" aria-label="Sources">
          {plan.entities.sources.map((s) => (
            <li key={s.id} className="flex items-center gap-2">
              <span className="min-w-0 truncate font-mono text-zinc-700">{visibleText(s.queue)}</span>
              {s.orderSensitive && <Badge tone="violet">order-sensitive</Badge>}
              <span className="ml-auto shrink-0 text-zinc-500 tabular-nums">
                {plural(s.messages, 'message')} · {plural(s.entities, 'entity', 'entities')}
              </span>
            </li>
          ))}
        </ul>
      )}
    </Section>
  )
}

/** The plan's "Start" section: now, or at a time in the future. */
export function StartSection({ choices, choose, startInvalid }: Omit<ChoiceProps, 'plan'> & { startInvalid: boolean }) {
  return (
    <Section title="Start" label="Start">
      <div className="flex items-start gap-4">
        <Field label="Start at" hint="empty: as soon as it may (after approval, when needed)" error={startInvalid ? 'a time in the future' : undefined} className="w-64">
          <Input type="datetime-local" value={choices.startText} onChange={(e) => choose({ type: 'start', text: e.target.value })} invalid={startInvalid} aria-label="Start at" />
        </Field>
        <p className="min-w-0 flex-1 pt-[19px] text-xs text-zinc-500">
          Until it starts, a scheduled replay holds only its list of messages: nothing is marked replaying and no entity is paused. At the start the targets are checked again.
        </p>
      </div>
    </Section>
  )
}

/** The plan's "Approval" section: why a second operator must approve this replay. */
export function ApprovalSection({ plan }: { plan: ReplayPlanDto }) {
  return (
    <Section title="Approval" label="Approval">
      <div data-testid="plan-approval" className="rounded-md border border-violet-200 bg-violet-50/60 px-3 py-2 text-violet-950">
        <p>
          <strong className="font-medium">Needs approval by a second operator:</strong> {plan.approval.reasons.map(visibleText).join('; ')}.
        </p>
        <p className="mt-0.5 text-xs text-violet-900/80">The replay waits, without marking or pausing anything, until another operator approves it on its page.</p>
      </div>
    </Section>
  )
}

/** The plan's "Confirm" section: a large replay starts only once its count is typed. */
export function ConfirmCountSection({ plan, choices, choose, confirmCount, countConfirmed }: ChoiceProps & { confirmCount: number; countConfirmed: boolean }) {
  return (
    <Section title="Confirm" label="Confirm the count">
      <div data-testid="confirm-count" className="flex items-center gap-3 rounded-md border border-amber-300 bg-amber-50/60 px-3 py-2 text-amber-950">
        <p className="min-w-0 flex-1">
          <strong className="font-medium">Large replay.</strong> {plural(confirmCount, 'message')} will be published (replays of{' '}
          {formatCount(plan.largeJobMessages)} or more need their count typed). Type <span className="font-mono font-semibold">{confirmCount}</span> to confirm.
        </p>
        <Input
          inputMode="numeric"
          value={choices.typedCount}
          onChange={(e) => choose({ type: 'typed-count', text: e.target.value })}
          invalid={choices.typedCount.trim() !== '' && !countConfirmed}
          placeholder="count"
          autoComplete="off"
          aria-label="Number of messages to confirm"
          className="w-28 shrink-0"
        />
      </div>
    </Section>
  )
}
