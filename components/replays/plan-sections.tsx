'use client'

import Link from 'next/link'
import type { ReactNode } from 'react'
import { Skeleton } from '@/components/ui/skeleton'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import type { ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { exclusionLabel, formatDuration } from './replay-format'

/*
 * The replay plan dialog's frame and its first section (replay-plan-dialog.tsx): what the selection holds, what a
 * replay of it would publish and leave out, and the warnings.
 */

/** One titled section of the plan dialog. */
export function Section({ title, children, aside, label }: { title: string; children: ReactNode; aside?: ReactNode; label?: string }) {
  return (
    <section aria-label={label ?? title} className="border-t border-zinc-100 py-3 first:border-t-0 first:pt-0 last:pb-0">
      <div className="mb-2 flex items-baseline justify-between gap-2">
        <h3 className="text-[11px] font-semibold tracking-wide text-zinc-500 uppercase">{title}</h3>
        {aside}
      </div>
      {children}
    </section>
  )
}

function Numbers({ plan, estimate }: { plan: ReplayPlanDto; estimate: number | null }) {
  const excluded = plan.excluded.reduce((a, e) => a + e.count, 0)
  const items = [
    { label: 'Matched', value: formatCount(plan.matched), testId: 'plan-matched' },
    { label: 'Replayable', value: formatCount(plan.replayable), testId: 'plan-replayable', strong: true },
    { label: 'Excluded', value: formatCount(excluded), testId: 'plan-excluded', warn: excluded > 0 },
    { label: 'Entities', value: formatCount(plan.entities.count), testId: 'plan-entities' },
    { label: 'Estimated time', value: formatDuration(estimate ?? plan.estimatedSeconds), testId: 'plan-estimate' },
  ]
  // Plans frozen before edit and replay existed have no editedMessages.
  const edited = plan.editedMessages ?? 0
  return (
    <>
      <dl className="grid grid-cols-5 gap-px overflow-hidden rounded-md border border-zinc-200 bg-zinc-100" aria-label="Plan numbers">
        {items.map((i) => (
          <div key={i.label} className="min-w-0 bg-white px-3 py-2">
            <dt className="truncate text-[11px] font-medium tracking-wide text-zinc-500 uppercase">{i.label}</dt>
            <dd data-testid={i.testId} className={cn('mt-0.5 truncate text-base font-semibold tabular-nums', i.warn ? 'text-amber-700' : i.strong ? 'text-brand' : 'text-zinc-900')}>
              {i.value}
            </dd>
          </div>
        ))}
      </dl>
      {edited > 0 && (
        <p className="mt-2 rounded-md border border-violet-200 bg-violet-50 px-3 py-1.5 text-xs text-violet-900" data-testid="plan-edited">
          {plural(edited, 'message')} {edited === 1 ? 'goes' : 'go'} out as an edited revision (the newest one, frozen when the replay starts), never as the original.
        </p>
      )}
    </>
  )
}

function Exclusions({ plan }: { plan: ReplayPlanDto }) {
  if (plan.excluded.length === 0) {
    // Nothing left out is not the same as "can be replayed": a plan to nowhere excludes nothing and still cannot run.
    return <p className="text-zinc-500">{plan.canRun ? 'Every matched message can be replayed.' : 'No message is left out; the warnings say why the plan cannot run.'}</p>
  }
  return (
    <ul className="space-y-1" data-testid="plan-exclusions">
      {plan.excluded.map((e) => (
        <li key={e.reason} className="flex min-w-0 items-baseline gap-2">
          <span className="shrink-0 font-semibold text-amber-700 tabular-nums">{formatCount(e.count)}</span>
          <span className="min-w-0 flex-1">
            {exclusionLabel(e.reason)}
            {e.sampleIds.length > 0 && (
              <span className="ml-2 text-xs text-zinc-500">
                e.g.{' '}
                {e.sampleIds.slice(0, 5).map((id, i) => (
                  <span key={id}>
                    {i > 0 && ', '}
                    <Link href={`/messages/${id}`} className="font-mono hover:text-zinc-900 hover:underline">
                      #{id}
                    </Link>
                  </span>
                ))}
              </span>
            )}
          </span>
        </li>
      ))}
    </ul>
  )
}

/** The plan's "Selection" section: its numbers, warnings and exclusions. */
export function SelectionSection({ plan, estimate }: { plan: ReplayPlanDto; estimate: number | null }) {
  return (
    <Section title="Selection" label="Selection">
      <Numbers plan={plan} estimate={estimate} />
      {plan.warnings.length > 0 && (
        <ul role="alert" aria-label="Warnings" className="mt-2 space-y-1 rounded-md border border-amber-300 bg-amber-50 px-3 py-2 text-amber-950" data-testid="plan-warnings">
          {plan.warnings.map((w, i) => (
            <li key={i} className="flex gap-2">
              <span aria-hidden className="text-amber-600">
                ▲
              </span>
              <span className="min-w-0">{visibleText(w)}</span>
            </li>
          ))}
        </ul>
      )}
      <div className="mt-2">
        <Exclusions plan={plan} />
      </div>
    </Section>
  )
}

export function PlanSkeleton() {
  return (
    <div className="space-y-3" aria-busy aria-label="Planning">
      <Skeleton className="h-[54px] w-full" />
      <Skeleton className="h-3 w-40" />
      <Skeleton className="h-4 w-2/3" />
      <Skeleton className="h-3 w-24" />
      <Skeleton className="h-[88px] w-full" />
      <Skeleton className="h-[72px] w-full" />
    </div>
  )
}
