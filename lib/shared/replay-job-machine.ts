/**
 * The replay job's state machine (docs/ARCHITECTURE.md#job-lifecycle): its statuses and, for each event, which status
 * it moves a job from and to. Pure data, shared: the API's schemas and the UI list the statuses from here, and every
 * status change on the server goes through transitionReplayJob (lib/server/replay/transition-replay-job.ts), which
 * builds its UPDATE from this table and refuses, in the same statement, a job whose status the table does not list.
 * The SQL CHECK on replay_jobs.status allows exactly these statuses (tests/integration/replay-job-machine.test.ts).
 *
 * 'awaiting_approval' and 'scheduled' jobs have not started: they hold only their items. 'rejected' and 'expired' end
 * a job that never started. 'halted': a staged job stopped by its re-failures; it waits for resume or cancel
 * (docs/operations.md#staged-replays).
 */
export const REPLAY_JOB_STATUSES = ['awaiting_approval', 'scheduled', 'pending', 'running', 'halted', 'completed', 'cancelled', 'failed', 'rejected', 'expired'] as const
export type ReplayJobStatus = (typeof REPLAY_JOB_STATUSES)[number]

/** A job in one of these has ended: no event moves it on. */
export const REPLAY_JOB_FINAL_STATUSES = ['completed', 'cancelled', 'failed', 'rejected', 'expired'] as const satisfies readonly ReplayJobStatus[]

/**
 * What happens to a job. Scheduling is `create` with a start time or `approve`. Three things the executor does change
 * no status and are not events here: a stage published and its window passed (a staged job is `running` throughout),
 * and a lost lease, which the next `claim` takes over (`running` → `running`).
 */
export const REPLAY_JOB_EVENTS = [
  'create', 'approve', 'reject', 'expire', 'replan', 'start', 'cancel', 'claim', 'halt', 'resume', 'request-cancel', 'halt-timeout', 'finish',
] as const
export type ReplayJobEvent = (typeof REPLAY_JOB_EVENTS)[number]

type Transition = { event: ReplayJobEvent; from: ReplayJobStatus | null; to: ReplayJobStatus; why: string }

/** Every transition a job may take; `from: null` is a job being created. An event absent for a status is refused. */
export const REPLAY_JOB_TRANSITIONS = [
  { event: 'create', from: null, to: 'pending', why: 'POST /api/replays, neither flagged nor scheduled; or a release of held messages' },
  { event: 'create', from: null, to: 'awaiting_approval', why: 'the approval policy flags it' },
  { event: 'create', from: null, to: 'scheduled', why: 'startAt in the future' },
  { event: 'approve', from: 'awaiting_approval', to: 'scheduled', why: 'a second operator approves; it starts at startAt, or now' },
  { event: 'reject', from: 'awaiting_approval', to: 'rejected', why: 'a second operator rejects' },
  { event: 'expire', from: 'awaiting_approval', to: 'expired', why: 'approval_expires_at passed' },
  { event: 'replan', from: 'scheduled', to: 'awaiting_approval', why: 'at its start, the plan changed since approval' },
  { event: 'start', from: 'scheduled', to: 'pending', why: 'start_at reached: messages taken, entities paused' },
  { event: 'cancel', from: 'awaiting_approval', to: 'cancelled', why: 'cancelled before it started' },
  { event: 'cancel', from: 'scheduled', to: 'cancelled', why: 'cancelled before it started, or none of its messages is dead any more' },
  { event: 'claim', from: 'pending', to: 'running', why: 'an executor takes the lease' },
  { event: 'claim', from: 'running', to: 'running', why: 'a lease given back or lost (expired) is taken over' },
  { event: 'halt', from: 'running', to: 'halted', why: "a stage's re-failures reached the threshold" },
  { event: 'resume', from: 'halted', to: 'running', why: 'an operator resumes it' },
  { event: 'request-cancel', from: 'pending', to: 'pending', why: 'cancel requested; the run (or the request itself) closes it' },
  { event: 'request-cancel', from: 'running', to: 'running', why: 'cancel requested; the run sees it within its heartbeat' },
  { event: 'request-cancel', from: 'halted', to: 'running', why: 'cancel requested; handed back to the executor to close' },
  { event: 'halt-timeout', from: 'halted', to: 'running', why: 'halted too long: handed back with a cancel request' },
  { event: 'finish', from: 'running', to: 'completed', why: 'every item has its outcome' },
  { event: 'finish', from: 'running', to: 'cancelled', why: 'a cancelled run closed its items' },
  { event: 'finish', from: 'running', to: 'failed', why: 'five failed runs' },
  { event: 'finish', from: 'pending', to: 'cancelled', why: 'cancelled before any executor claimed it, with nothing paused' },
] as const satisfies readonly Transition[]

/** The statuses a job may be created in. */
export type ReplayJobCreatedStatus = Extract<(typeof REPLAY_JOB_TRANSITIONS)[number], { event: 'create' }>['to']

/** The transitions `event` may take (only those to `to`, when given). */
export function transitionsOf(event: ReplayJobEvent, to?: ReplayJobStatus): { from: ReplayJobStatus | null; to: ReplayJobStatus }[] {
  return REPLAY_JOB_TRANSITIONS.filter((t) => t.event === event && (to === undefined || t.to === to))
}

/** Whether `event` may happen to a job in `status` (and lead to `to`, when given). */
export function canHappen(event: ReplayJobEvent, status: string, to?: ReplayJobStatus): boolean {
  return transitionsOf(event, to).some((t) => t.from === status)
}
