'use client'

import { useRouter } from 'next/navigation'
import { Dialog } from '@/components/ui/dialog'
import { ErrorState } from '@/components/ui/states'
import { cn } from '@/lib/client/cn'
import { useCreateReplay, type ReplayRequest, type SelectionInput } from '@/lib/client/use-replays'
import { PlanFooter } from './plan-footer'
import { ApprovalSection, ConfirmCountSection, DeliverySection, StartSection } from './plan-run-sections'
import { PlanSkeleton, Section, SelectionSection } from './plan-sections'
import { PlanStaging } from './plan-staging'
import { TargetSection } from './plan-target-section'
import { PlanVersions } from './plan-versions'
import type { TargetType } from './replay-plan-state'
import { usePlanDialog } from './use-plan-dialog'

type ReplayPlanDialogProps = {
  selection: SelectionInput
  /** What is being replayed, for the dialog's subtitle: "group #4", "3 selected messages". */
  subject: string
  onClose: () => void
}

/**
 * The replay plan: opening it runs a dry run; every choice (target, rate, pausing entities, allowing a fan-out) re-plans.
 * Confirm creates the job from the same request and opens its page. The choices and what follows from them are
 * usePlanDialog's; each section renders one part (plan-sections.tsx, plan-target-section.tsx, plan-run-sections.tsx).
 */
export function ReplayPlanDialog({ selection, subject, onClose }: ReplayPlanDialogProps) {
  const router = useRouter()
  const create = useCreateReplay()
  const state = usePlanDialog(selection)
  const { choices, choose, plan, planQuery, current, confirmCount, startAt } = state
  const canConfirm = state.confirmable && !create.isPending

  const confirm = () => {
    if (!canConfirm) return
    const body: ReplayRequest = {
      ...state.request,
      ...(confirmCount !== null && { confirmCount }),
      ...(startAt && { startAt: startAt.toISOString() }),
      ...(choices.newTrace && { newTrace: true }),
    }
    create.mutate(body, { onSuccess: (job) => router.push(`/replays/${job.id}`) })
  }

  const chooseTarget = (target: TargetType) => {
    choose({ type: 'target', target })
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
      footer={<PlanFooter state={state} createError={create.error} creating={create.isPending} canConfirm={canConfirm} onClose={onClose} />}
    >
      {planQuery.error && !plan ? (
        <ErrorState title="Could not plan this replay" error={planQuery.error} onRetry={() => void planQuery.refetch()} />
      ) : !plan ? (
        <PlanSkeleton />
      ) : (
        <div className={cn('transition-opacity', !current && 'opacity-70')} aria-busy={!current || undefined}>
          <SelectionSection plan={plan} estimate={state.estimate} />
          <TargetSection plan={plan} choices={choices} choose={choose} effectiveType={state.effectiveType} onTarget={chooseTarget} refusal={state.refusal} fetching={planQuery.isFetching} />
          <DeliverySection plan={plan} choices={choices} choose={choose} rateInvalid={state.rateInvalid} />
          {plan.versions && (
            <Section title="Versions" label="Entity versions">
              <PlanVersions versions={plan.versions} onlyNewest={choices.onlyNewest} onOnlyNewest={(onlyNewest) => choose({ type: 'only-newest', onlyNewest })} />
            </Section>
          )}
          <Section title="Stages" label="Stages">
            <PlanStaging plan={plan} staged={state.staged} onStaged={(staged) => choose({ type: 'staged', staged })} draft={choices.stagingDraft} onDraft={(draft) => choose({ type: 'staging-draft', draft })} errors={state.stagingErrors} />
          </Section>
          <StartSection choices={choices} choose={choose} startInvalid={state.startInvalid} />
          {state.needsApproval && plan.canRun && <ApprovalSection plan={plan} />}
          {confirmCount !== null && plan.canRun && <ConfirmCountSection plan={plan} choices={choices} choose={choose} confirmCount={confirmCount} countConfirmed={state.countConfirmed} />}
        </div>
      )}
    </Dialog>
  )
}
