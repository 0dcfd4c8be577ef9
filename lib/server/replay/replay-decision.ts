import 'server-only'
import type { Sql } from '@/lib/server/platform/db/sql'
import { AppError, notFound } from '@/lib/server/platform/errors/app-error'
import { lockJobForDecision, type DecisionCandidate } from './approval-store'

/** Who decides: a person (a token never approves) and the source scope of their `replays:approve`. */
export type Decider = { actor: string; kind: 'user' | 'token'; sourceIds: string[] | null }

/**
 * The four-eyes checks approving and rejecting share (docs/security.md#four-eyes), on the locked job: a token cannot
 * decide (403), the requester cannot decide their own job (403), a job of sources the decider holds no
 * `replays:approve` on is not found for them (404, as for every read), and only a job awaiting approval can be
 * decided (409; an expired one says so).
 */
export async function lockForDecision({ sql, id, decider, verb }: { sql: Sql; id: string; decider: Decider; verb: 'approve' | 'reject' }): Promise<DecisionCandidate> {
  if (decider.kind === 'token') {
    throw new AppError('forbidden', `An API token cannot ${verb} a replay: approval is a person's decision (four eyes); sign in as a user`)
  }
  const job = await lockJobForDecision({ sql, id, sourceIds: decider.sourceIds })
  if (!job) throw notFound(`replay ${id}`)
  if (job.created_by === decider.actor) {
    throw new AppError(
      'forbidden',
      verb === 'approve'
        ? `You requested replay ${id}: a second operator must approve it (four eyes)`
        : `You requested replay ${id}: cancel it instead of rejecting it`,
    )
  }
  if (job.status !== 'awaiting_approval') throw new AppError('conflict', `Replay ${id} is ${job.status.replace('_', ' ')}, not awaiting approval`)
  if (job.expired) throw new AppError('conflict', `Replay ${id}'s approval request has expired; plan and request it again`)
  return job
}
