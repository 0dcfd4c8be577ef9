'use client'

import { Button } from '@/components/ui/button'
import { InlineError } from '@/components/ui/states'
import { plural } from '@/lib/client/format'
import type { PlanDialogState } from './use-plan-dialog'

type PlanFooterProps = {
  state: PlanDialogState
  /** Creating the job failed (the API's answer), or null. */
  createError: unknown
  creating: boolean
  canConfirm: boolean
  onClose: () => void
}

/** The plan dialog's footer: one line saying what stands between the operator and the replay, Cancel, and Confirm. */
export function PlanFooter({ state, createError, creating, canConfirm, onClose }: PlanFooterProps) {
  const { plan, refusal, replanError, settling, countConfirmed, needsApproval, startAt, startInvalid } = state
  const fetching = state.planQuery.isFetching
  return (
    <>
      <span className="mr-auto min-w-0 truncate text-xs text-zinc-500" aria-live="polite">
        {createError ? (
          <InlineError error={createError} />
        ) : refusal && !fetching ? (
          <span className="text-red-700">Target refused: choose another target.</span>
        ) : replanError && !fetching ? (
          <InlineError error={replanError} />
        ) : fetching || settling ? (
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
      {creating
        ? needsApproval ? 'Requesting…' : 'Starting…'
        : needsApproval
          ? 'Request approval'
          : plan
            ? `${startAt && !startInvalid ? 'Schedule' : 'Replay'} ${plural(plan.replayable, 'message')}`
            : 'Replay'}
    </Button>
    </>
  )
}
