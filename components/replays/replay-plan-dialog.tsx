'use client'

import Link from 'next/link'
import { useRouter } from 'next/navigation'
import { useEffect, useMemo, useState, type ReactNode } from 'react'
import { Badge } from '@/components/ui/badge'
import { Button } from '@/components/ui/button'
import { Dialog } from '@/components/ui/dialog'
import { Checkbox, Field, Input } from '@/components/ui/fields'
import { DataTable, type DataColumn } from '@/components/ui/data-table'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState, InlineError } from '@/components/ui/states'
import { ApiError } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useNow } from '@/lib/client/use-now'
import { useCreateReplay, useReplayPlan, type ReplayRequest, type SelectionInput } from '@/lib/client/use-replays'
import type { ReplayPlanDto, ReplayPlanTargetDto, ReplayTarget } from '@/lib/shared/schemas/replay'
import { exchangeText, exclusionLabel, formatDuration } from './replay-format'
import { EMPTY_STAGING_DRAFT, parseStagingDraft, PlanStaging, type StagingDraft } from './plan-staging'
import { PlanVersions } from './plan-versions'

type TargetType = ReplayTarget['type']

type ReplayPlanDialogProps = {
  selection: SelectionInput
  /** What is being replayed, for the dialog's subtitle: "group #4", "3 selected messages". */
  subject: string
  onClose: () => void
}

const TARGETS: { type: TargetType; label: string; hint: string }[] = [
  { type: 'source', label: 'Source exchange', hint: 'the exchange each message was first published to, with its original routing key' },
  { type: 'queue', label: 'Failed queue only', hint: 'straight into the queue each message failed in (default exchange): no other consumer sees it' },
  { type: 'custom', label: 'Custom', hint: 'an exchange and routing key of your choice' },
]

const MAX_RATE = 50_000

/** The value after it has stopped changing for `ms`; typing into the rate or exchange does not re-plan per keystroke. */
function useSettled<T>(value: T, ms = 350): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(t)
  }, [value, ms])
  return settled
}

const parseRate = (text: string): number | null => {
  if (!/^\d{1,6}$/.test(text.trim())) return null
  const n = Number(text)
  return n >= 1 && n <= MAX_RATE ? n : null
}

function Section({ title, children, aside, label }: { title: string; children: ReactNode; aside?: ReactNode; label?: string }) {
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

function queuesText(t: ReplayPlanTargetDto): string {
  if (t.exists === false) return 'exchange missing'
  if (t.queues === null) return 'unknown'
  if (t.queues === 0) return t.exchange === '' ? 'unroutable: no such queue' : 'unroutable: nothing bound'
  return plural(t.queues, 'queue')
}

const TARGET_COLUMNS: DataColumn[] = [
  { header: 'Exchange' },
  { header: 'Routing key', width: 'w-[28%]' },
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
              <td className="truncate font-mono text-xs" title={exchangeText(t.exchange)}>
                {exchangeText(t.exchange)}
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

/** The API's refusal of a target (422 with `details.refused`): amq.* and Lazarus' exchanges, or not on the allow-list. */
function targetRefusal(error: unknown): { message: string; allowedPatterns: string[] | null } | null {
  if (!(error instanceof ApiError) || error.status !== 422) return null
  const details = error.details as { refused?: unknown; allowedPatterns?: unknown } | undefined
  if (typeof details?.refused !== 'string') return null
  const allowed = Array.isArray(details.allowedPatterns) ? details.allowedPatterns.filter((p): p is string => typeof p === 'string') : null
  return { message: error.message, allowedPatterns: allowed }
}

function TargetRefused({ refusal }: { refusal: { message: string; allowedPatterns: string[] | null } }) {
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

function PlanSkeleton() {
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

/**
 * The replay plan: opening it runs a dry run; every choice (target, rate, pausing entities, allowing a
 * fan-out) re-plans. Confirm creates the job from the same request and opens its page.
 */
export function ReplayPlanDialog({ selection, subject, onClose }: ReplayPlanDialogProps) {
  const router = useRouter()
  const [targetType, setTargetType] = useState<TargetType | null>(null)
  const [exchange, setExchange] = useState('')
  const [routingKey, setRoutingKey] = useState('')
  const [rateText, setRateText] = useState<string | null>(null)
  const [pauseEntities, setPauseEntities] = useState<boolean | null>(null)
  const [allowFanOut, setAllowFanOut] = useState(false)
  const [onlyNewest, setOnlyNewest] = useState(false)
  const [typedCount, setTypedCount] = useState('')
  // datetime-local text in the browser's zone; empty: start now.
  const [startText, setStartText] = useState('')
  const now = useNow()
  const create = useCreateReplay()

  const custom = useSettled(useMemo(() => ({ exchange, routingKey }), [exchange, routingKey]))
  const rate = rateText === null ? null : parseRate(rateText)
  const settledRate = useSettled(rate)

  // Staging: offered switched on from the admin's size (the plan's stagingSuggested); null follows that offer.
  const [stagedChoice, setStagedChoice] = useState<boolean | null>(null)
  const [stagingDraft, setStagingDraft] = useState<StagingDraft>(EMPTY_STAGING_DRAFT)
  const settledDraft = useSettled(stagingDraft)
  const [suggested, setSuggested] = useState(false)
  const staged = stagedChoice ?? suggested
  const parsedStaging = useMemo(() => parseStagingDraft(settledDraft), [settledDraft])
  const stagingInvalid = staged && Object.keys(parseStagingDraft(stagingDraft).errors).length > 0

  const request = useMemo<ReplayRequest>(() => {
    const r: ReplayRequest = { selection }
    if (targetType === 'custom') r.target = { type: 'custom', exchange: custom.exchange.trim(), routingKey: custom.routingKey }
    else if (targetType) r.target = { type: targetType }
    if (settledRate !== null) r.ratePerSecond = settledRate
    if (pauseEntities !== null) r.pauseEntities = pauseEntities
    if (allowFanOut) r.allowFanOut = true
    if (staged && Object.keys(parsedStaging.errors).length === 0) r.staging = parsedStaging.input
    if (onlyNewest) r.onlyNewestPerEntity = true
    return r
  }, [selection, targetType, custom, settledRate, pauseEntities, allowFanOut, staged, parsedStaging, onlyNewest])

  const planQuery = useReplayPlan(request)
  // A re-plan that fails (a custom target the API refuses) keeps the last plan on screen, so the choice can be fixed.
  const [lastPlan, setLastPlan] = useState<ReplayPlanDto | undefined>(undefined)
  if (planQuery.data && !planQuery.isPlaceholderData && planQuery.data !== lastPlan) {
    setLastPlan(planQuery.data)
    if (Boolean(planQuery.data.stagingSuggested) !== suggested) setSuggested(Boolean(planQuery.data.stagingSuggested))
  }
  const plan = planQuery.data ?? lastPlan
  const replanError = plan && planQuery.error ? planQuery.error : null
  const refusal = targetRefusal(planQuery.error)
  const settling = stagingDraft !== settledDraft || (rateText !== null && rate !== settledRate) || (targetType === 'custom' && (custom.exchange !== exchange || custom.routingKey !== routingKey))
  const current = Boolean(planQuery.data) && !planQuery.error && !planQuery.isPlaceholderData && !planQuery.isFetching && !settling
  const rateInvalid = rateText !== null && rate === null
  const effectiveType: TargetType = targetType ?? plan?.target.type ?? 'source'
  const effectiveRate = rate ?? plan?.ratePerSecond ?? null
  const estimate = plan && effectiveRate ? plan.replayable / effectiveRate : null
  const fanOut = plan?.targets.filter((t) => t.fansOut) ?? []
  // A large replay (the admin's threshold, Settings) starts only once its count is typed; the API checks it too.
  const confirmCount = plan?.confirmCount ?? null
  const countConfirmed = confirmCount === null || typedCount.trim() === String(confirmCount)
  const startAt = startText === '' ? null : new Date(startText)
  const startInvalid = startAt !== null && (Number.isNaN(startAt.getTime()) || startAt.getTime() <= now)
  const needsApproval = plan?.approval?.required === true
  const canConfirm = Boolean(plan?.canRun) && current && !rateInvalid && !stagingInvalid && staged === Boolean(plan?.staging) && !startInvalid && !create.isPending && (plan?.replayable ?? 0) > 0 && countConfirmed

  const confirm = () => {
    if (!canConfirm) return
    const body: ReplayRequest = { ...request, ...(confirmCount !== null && { confirmCount }), ...(startAt && { startAt: startAt.toISOString() }) }
    create.mutate(body, { onSuccess: (job) => router.push(`/replays/${job.id}`) })
  }

  const chooseTarget = (type: TargetType) => {
    setTargetType(type)
    setAllowFanOut(false)
    create.reset()
  }

  return (
    <Dialog
      title="Replay plan"
      description={subject}
      size="lg"
      onClose={onClose}
      onSubmit={confirm}
      canSubmit={canConfirm}
      footer={
        <>
          <span className="mr-auto min-w-0 truncate text-xs text-zinc-500" aria-live="polite">
            {create.error ? (
              <InlineError error={create.error} />
            ) : refusal && !planQuery.isFetching ? (
              <span className="text-red-700">Target refused: choose another target.</span>
            ) : replanError && !planQuery.isFetching ? (
              <InlineError error={replanError} />
            ) : planQuery.isFetching || settling ? (
              'Planning…'
            ) : plan && !plan.canRun ? (
              <span className="text-amber-800">This plan cannot run as it stands: see the warnings.</span>
            ) : plan && !countConfirmed ? (
              <span className="text-amber-800">Type the number of messages to confirm this large replay.</span>
            ) : plan ? (
              <>
                Messages are replayed only after the broker confirms them; <kbd className="font-mono">Enter</kbd> confirms.
              </>
            ) : null}
          </span>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" disabled={!canConfirm}>
            {create.isPending
              ? needsApproval ? 'Requesting…' : 'Starting…'
              : needsApproval
                ? 'Request approval'
                : plan
                  ? `${startAt && !startInvalid ? 'Schedule' : 'Replay'} ${plural(plan.replayable, 'message')}`
                  : 'Replay'}
          </Button>
        </>
      }
    >
      {planQuery.error && !plan ? (
        <ErrorState title="Could not plan this replay" error={planQuery.error} onRetry={() => void planQuery.refetch()} />
      ) : !plan ? (
        <PlanSkeleton />
      ) : (
        <div className={cn('transition-opacity', !current && 'opacity-70')} aria-busy={!current || undefined}>
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

          <Section title="Target" label="Target">
            <div role="radiogroup" aria-label="Replay target" className="grid grid-cols-3 gap-2">
              {TARGETS.map((t) => (
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
                    onChange={() => chooseTarget(t.type)}
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
                  <Input value={exchange} onChange={(e) => setExchange(e.target.value)} maxLength={255} placeholder="orders" autoComplete="off" aria-label="Custom exchange" />
                </Field>
                <Field label="Routing key">
                  <Input value={routingKey} onChange={(e) => setRoutingKey(e.target.value)} maxLength={255} placeholder="order.created" autoComplete="off" aria-label="Custom routing key" />
                </Field>
              </div>
            )}
            {refusal && !planQuery.isFetching && <TargetRefused refusal={refusal} />}
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
                  <Button onClick={() => chooseTarget('queue')}>Replay to the failed queue only</Button>
                  <label className="flex items-center gap-1.5 text-xs">
                    <Checkbox checked={allowFanOut} onChange={(e) => setAllowFanOut(e.target.checked)} />
                    Deliver to every bound queue anyway
                  </label>
                </div>
              </div>
            )}
          </Section>

          <Section title="Delivery" label="Delivery">
            <div className="flex items-start gap-6">
              <Field label="Rate (messages/s)" error={rateInvalid ? `a whole number from 1 to ${formatCount(MAX_RATE)}` : undefined} className="w-48">
                <Input
                  inputMode="numeric"
                  value={rateText ?? String(plan.ratePerSecond)}
                  onChange={(e) => setRateText(e.target.value)}
                  invalid={rateInvalid}
                  aria-label="Rate per second"
                />
              </Field>
              <div className="min-w-0 flex-1 pt-[19px]">
                <label className="flex items-center gap-2">
                  <Checkbox checked={pauseEntities ?? plan.pauseEntities} onChange={(e) => setPauseEntities(e.target.checked)} aria-describedby="pause-entities-hint" />
                  <span className="font-medium">Pause entities first</span>
                  {plan.entities.orderSensitive > 0 && <Badge tone="violet">order-sensitive</Badge>}
                </label>
                <p id="pause-entities-hint" className="mt-0.5 text-xs text-zinc-500">
                  {plan.entities.count === 0
                    ? 'These messages carry no entity keys: nothing to pause.'
                    : `${plural(plan.entities.count, 'entity', 'entities')}${plan.entities.orderSensitive ? `, ${formatCount(plan.entities.orderSensitive)} on order-sensitive sources` : ''}. Their new messages are held while the old ones replay, then released in order.`}
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

          {plan.versions && (
            <Section title="Versions" label="Entity versions">
              <PlanVersions versions={plan.versions} onlyNewest={onlyNewest} onOnlyNewest={setOnlyNewest} />
            </Section>
          )}
          <Section title="Stages" label="Stages">
            <PlanStaging plan={plan} staged={staged} onStaged={setStagedChoice} draft={stagingDraft} onDraft={setStagingDraft} errors={parseStagingDraft(stagingDraft).errors} />
          </Section>

          <Section title="Start" label="Start">
            <div className="flex items-start gap-4">
              <Field label="Start at" hint="empty: as soon as it may (after approval, when needed)" error={startInvalid ? 'a time in the future' : undefined} className="w-64">
                <Input type="datetime-local" value={startText} onChange={(e) => setStartText(e.target.value)} invalid={startInvalid} aria-label="Start at" />
              </Field>
              <p className="min-w-0 flex-1 pt-[19px] text-xs text-zinc-500">
                Until it starts, a scheduled replay holds only its list of messages: nothing is marked replaying and no entity is paused. At the start the targets are checked again.
              </p>
            </div>
          </Section>

          {needsApproval && plan.canRun && (
            <Section title="Approval" label="Approval">
              <div data-testid="plan-approval" className="rounded-md border border-violet-200 bg-violet-50/60 px-3 py-2 text-violet-950">
                <p>
                  <strong className="font-medium">Needs approval by a second operator:</strong> {plan.approval.reasons.map(visibleText).join('; ')}.
                </p>
                <p className="mt-0.5 text-xs text-violet-900/80">The replay waits, without marking or pausing anything, until another operator approves it on its page.</p>
              </div>
            </Section>
          )}

          {confirmCount !== null && plan.canRun && (
            <Section title="Confirm" label="Confirm the count">
              <div data-testid="confirm-count" className="flex items-center gap-3 rounded-md border border-amber-300 bg-amber-50/60 px-3 py-2 text-amber-950">
                <p className="min-w-0 flex-1">
                  <strong className="font-medium">Large replay.</strong> {plural(confirmCount, 'message')} will be published (replays of{' '}
                  {formatCount(plan.largeJobMessages)} or more need their count typed). Type <span className="font-mono font-semibold">{confirmCount}</span> to confirm.
                </p>
                <Input
                  inputMode="numeric"
                  value={typedCount}
                  onChange={(e) => setTypedCount(e.target.value)}
                  invalid={typedCount.trim() !== '' && !countConfirmed}
                  placeholder="count"
                  autoComplete="off"
                  aria-label="Number of messages to confirm"
                  className="w-28 shrink-0"
                />
              </div>
            </Section>
          )}
        </div>
      )}
    </Dialog>
  )
}
