import type { ReplayApprovalSettingsDto } from '@/lib/shared/schemas/replay-approval'
import type { ReplayTarget } from '@/lib/shared/schemas/replay'

/**
 * The four-eyes policy (docs/security.md#four-eyes), as one pure function: which of the admin's rules a replay meets.
 * Every rule is off until an admin turns it on (Settings → Replay approval). Kept free of I/O so the plan, the job's
 * creation and the unit tests (tests/unit/approval-policy.test.ts) all ask the same question.
 */
export type ApprovalPolicy = Pick<ReplayApprovalSettingsDto, 'aboveMessages' | 'editedMessages' | 'customTarget' | 'criticalSources'>

export type ApprovalFacts = {
  /** Messages the replay publishes. */
  replayable: number
  /** Of those, messages sent as an edited revision. */
  editedMessages: number
  target: ReplayTarget
  /** Queues of the replay's sources that are marked critical. */
  criticalQueues: string[]
}

export const APPROVAL_OFF: ApprovalPolicy = { aboveMessages: null, editedMessages: false, customTarget: false, criticalSources: false }

/** The reasons a second operator must approve the replay; empty: it starts without approval. */
export function approvalReasons(policy: ApprovalPolicy, facts: ApprovalFacts): string[] {
  const reasons: string[] = []
  if (policy.aboveMessages !== null && facts.replayable > policy.aboveMessages) {
    reasons.push(`it publishes ${facts.replayable} messages, more than ${policy.aboveMessages}`)
  }
  if (policy.editedMessages && facts.editedMessages > 0) {
    reasons.push(`it sends ${facts.editedMessages} edited message${facts.editedMessages === 1 ? '' : 's'}`)
  }
  if (policy.customTarget && facts.target.type === 'custom') {
    reasons.push(`its target is custom (exchange "${facts.target.exchange}", key "${facts.target.routingKey}")`)
  }
  if (policy.criticalSources && facts.criticalQueues.length > 0) {
    const queues = facts.criticalQueues.slice(0, 5).join(', ') + (facts.criticalQueues.length > 5 ? `, and ${facts.criticalQueues.length - 5} more` : '')
    reasons.push(`it replays messages of critical source${facts.criticalQueues.length === 1 ? '' : 's'} ${queues}`)
  }
  return reasons
}
