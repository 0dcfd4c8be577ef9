'use client'

import { useEffect, useMemo, useReducer, useState } from 'react'
import { useNow } from '@/lib/client/use-now'
import { useReplayPlan, type SelectionInput } from '@/lib/client/use-replays'
import type { ReplayPlanDto } from '@/lib/shared/schemas/replay'
import { parseStagingDraft } from './plan-staging'
import { INITIAL_CHOICES, parseRate, planChoicesReducer, planRequest, startAtOf, targetRefusal, type TargetType } from './replay-plan-state'

/** The value after it has stopped changing for `ms`; typing into the rate or exchange does not re-plan per keystroke. */
function useSettled<T>(value: T, ms = 350): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(t)
  }, [value, ms])
  return settled
}

/**
 * The replay plan dialog's state: the operator's choices (replay-plan-state.ts), the dry run they make, and what the
 * dialog derives from both: the plan on screen, whether it is current, what is invalid, and whether it may be confirmed.
 */
export function usePlanDialog(selection: SelectionInput) {
  const [choices, choose] = useReducer(planChoicesReducer, INITIAL_CHOICES)
  const now = useNow()

  const custom = useSettled(useMemo(() => ({ exchange: choices.exchange, routingKey: choices.routingKey }), [choices.exchange, choices.routingKey]))
  const rate = choices.rateText === null ? null : parseRate(choices.rateText)
  const settledRate = useSettled(rate)

  // Staging: offered switched on from the admin's size (the plan's stagingSuggested); a null choice follows that offer.
  const settledDraft = useSettled(choices.stagingDraft)
  const [suggested, setSuggested] = useState(false)
  const staged = choices.stagedChoice ?? suggested
  const parsedStaging = useMemo(() => parseStagingDraft(settledDraft), [settledDraft])
  const stagingErrors = parseStagingDraft(choices.stagingDraft).errors
  const stagingInvalid = staged && Object.keys(stagingErrors).length > 0

  const { targetType, pauseEntities, allowFanOut, onlyNewest } = choices
  const request = useMemo(
    () => planRequest(selection, { targetType, pauseEntities, allowFanOut, onlyNewest }, { custom, rate: settledRate, staging: staged && Object.keys(parsedStaging.errors).length === 0 ? parsedStaging.input : null }),
    [selection, targetType, custom, settledRate, pauseEntities, allowFanOut, staged, parsedStaging, onlyNewest],
  )

  const planQuery = useReplayPlan(request)
  // A re-plan that fails (a custom target the API refuses) keeps the last plan on screen, so the choice can be fixed.
  const [lastPlan, setLastPlan] = useState<ReplayPlanDto | undefined>(undefined)
  if (planQuery.data && !planQuery.isPlaceholderData && planQuery.data !== lastPlan) {
    setLastPlan(planQuery.data)
    if (Boolean(planQuery.data.stagingSuggested) !== suggested) setSuggested(Boolean(planQuery.data.stagingSuggested))
  }
  const plan = planQuery.data ?? lastPlan
  const settling =
    choices.stagingDraft !== settledDraft ||
    (choices.rateText !== null && rate !== settledRate) ||
    (targetType === 'custom' && (custom.exchange !== choices.exchange || custom.routingKey !== choices.routingKey))
  const current = Boolean(planQuery.data) && !planQuery.error && !planQuery.isPlaceholderData && !planQuery.isFetching && !settling
  const rateInvalid = choices.rateText !== null && rate === null
  const effectiveType: TargetType = targetType ?? plan?.target.type ?? 'source'
  const effectiveRate = rate ?? plan?.ratePerSecond ?? null
  // A large replay (the admin's threshold, Settings) starts only once its count is typed; the API checks it too.
  const confirmCount = plan?.confirmCount ?? null
  const countConfirmed = confirmCount === null || choices.typedCount.trim() === String(confirmCount)
  const start = startAtOf(choices.startText, now)
  const needsApproval = plan?.approval?.required === true
  const confirmable = Boolean(plan?.canRun) && current && !rateInvalid && !stagingInvalid && staged === Boolean(plan?.staging) && !start.invalid && (plan?.replayable ?? 0) > 0 && countConfirmed

  return {
    choices,
    choose,
    request,
    planQuery,
    plan,
    /** The error of a re-plan while an earlier plan stays on screen. */
    replanError: plan && planQuery.error ? planQuery.error : null,
    refusal: targetRefusal(planQuery.error),
    settling,
    current,
    rateInvalid,
    effectiveType,
    estimate: plan && effectiveRate ? plan.replayable / effectiveRate : null,
    staged,
    stagingErrors,
    confirmCount,
    countConfirmed,
    startAt: start.startAt,
    startInvalid: start.invalid,
    needsApproval,
    /** Everything but a create in flight, which the dialog knows. */
    confirmable,
  }
}

export type PlanDialogState = ReturnType<typeof usePlanDialog>
