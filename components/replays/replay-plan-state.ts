import { ApiError } from '@/lib/client/api'
import type { ReplayRequest, SelectionInput } from '@/lib/client/use-replays'
import type { ReplayTarget } from '@/lib/shared/schemas/replay'
import { EMPTY_STAGING_DRAFT, type StagingDraft } from './plan-staging'

/*
 * What the operator chose in the replay plan dialog (replay-plan-dialog.tsx), as one reducer: the target, the rate and
 * pausing, the versions, the stages, the start time and the typed confirmation. A choice left null follows what the
 * plan offers (its target, rate, pausing, staging); the request sent for a dry run or the job is built from the choices.
 */

export type TargetType = ReplayTarget['type']

export const MAX_RATE = 50_000

export type PlanChoices = {
  /** null: the plan's target (the sources' default, else `source`). */
  targetType: TargetType | null
  exchange: string
  routingKey: string
  allowFanOut: boolean
  /** The rate input's text; null: the plan's rate. */
  rateText: string | null
  /** null: the plan's default (on for order-sensitive sources). */
  pauseEntities: boolean | null
  onlyNewest: boolean
  /** Copies start a new trace (sent only when the job is created: the plan does not depend on it). */
  newTrace: boolean
  /** Staging switched on or off; null follows the plan's offer (stagingSuggested). */
  stagedChoice: boolean | null
  stagingDraft: StagingDraft
  /** datetime-local text in the browser's zone; empty: start now. */
  startText: string
  /** The count typed to confirm a large replay. */
  typedCount: string
}

export const INITIAL_CHOICES: PlanChoices = {
  targetType: null,
  exchange: '',
  routingKey: '',
  allowFanOut: false,
  rateText: null,
  pauseEntities: null,
  onlyNewest: false,
  newTrace: false,
  stagedChoice: null,
  stagingDraft: EMPTY_STAGING_DRAFT,
  startText: '',
  typedCount: '',
}

export type PlanChoice =
  /** Another target: a fan-out allowed for the previous one is not allowed for this one. */
  | { type: 'target'; target: TargetType }
  | { type: 'custom-target'; exchange?: string; routingKey?: string }
  | { type: 'allow-fan-out'; allow: boolean }
  | { type: 'rate'; text: string }
  | { type: 'pause-entities'; pause: boolean }
  | { type: 'only-newest'; onlyNewest: boolean }
  | { type: 'new-trace'; newTrace: boolean }
  | { type: 'staged'; staged: boolean }
  | { type: 'staging-draft'; draft: StagingDraft }
  | { type: 'start'; text: string }
  | { type: 'typed-count'; text: string }

export function planChoicesReducer(state: PlanChoices, action: PlanChoice): PlanChoices {
  switch (action.type) {
    case 'target':
      return { ...state, targetType: action.target, allowFanOut: false }
    case 'custom-target':
      return { ...state, exchange: action.exchange ?? state.exchange, routingKey: action.routingKey ?? state.routingKey }
    case 'allow-fan-out':
      return { ...state, allowFanOut: action.allow }
    case 'rate':
      return { ...state, rateText: action.text }
    case 'pause-entities':
      return { ...state, pauseEntities: action.pause }
    case 'only-newest':
      return { ...state, onlyNewest: action.onlyNewest }
    case 'new-trace':
      return { ...state, newTrace: action.newTrace }
    case 'staged':
      return { ...state, stagedChoice: action.staged }
    case 'staging-draft':
      return { ...state, stagingDraft: action.draft }
    case 'start':
      return { ...state, startText: action.text }
    case 'typed-count':
      return { ...state, typedCount: action.text }
  }
}

/** A whole number of messages per second from 1 to MAX_RATE, or null. */
export const parseRate = (text: string): number | null => {
  if (!/^\d{1,6}$/.test(text.trim())) return null
  const n = Number(text)
  return n >= 1 && n <= MAX_RATE ? n : null
}

/**
 * The request of a dry run (and of the job): only what the operator chose, so the API fills in the rest. The values
 * that are typed (custom target, rate, staging) come settled, so typing does not re-plan per keystroke.
 */
export function planRequest(
  selection: SelectionInput,
  choices: Pick<PlanChoices, 'targetType' | 'pauseEntities' | 'allowFanOut' | 'onlyNewest'>,
  settled: { custom: { exchange: string; routingKey: string }; rate: number | null; staging: ReplayRequest['staging'] | null },
): ReplayRequest {
  const r: ReplayRequest = { selection }
  if (choices.targetType === 'custom') r.target = { type: 'custom', exchange: settled.custom.exchange.trim(), routingKey: settled.custom.routingKey }
  else if (choices.targetType) r.target = { type: choices.targetType }
  if (settled.rate !== null) r.ratePerSecond = settled.rate
  if (choices.pauseEntities !== null) r.pauseEntities = choices.pauseEntities
  if (choices.allowFanOut) r.allowFanOut = true
  if (settled.staging) r.staging = settled.staging
  if (choices.onlyNewest) r.onlyNewestPerEntity = true
  return r
}

/** The start time the operator typed, or null for now; `invalid` when it does not parse or is not in the future. */
export function startAtOf(startText: string, now: number): { startAt: Date | null; invalid: boolean } {
  const startAt = startText === '' ? null : new Date(startText)
  return { startAt, invalid: startAt !== null && (Number.isNaN(startAt.getTime()) || startAt.getTime() <= now) }
}

export type TargetRefusal = { message: string; allowedPatterns: string[] | null }

/** The API's refusal of a target (422 with `details.refused`): amq.* and Lazarus' exchanges, or not on the allow-list. */
export function targetRefusal(error: unknown): TargetRefusal | null {
  if (!(error instanceof ApiError) || error.status !== 422) return null
  const details = error.details as { refused?: unknown; allowedPatterns?: unknown } | undefined
  if (typeof details?.refused !== 'string') return null
  const allowed = Array.isArray(details.allowedPatterns) ? details.allowedPatterns.filter((p): p is string => typeof p === 'string') : null
  return { message: error.message, allowedPatterns: allowed }
}
