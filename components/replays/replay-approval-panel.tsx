'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Panel } from '@/components/ui/panel'
import { InlineError } from '@/components/ui/states'
import { AbsoluteTime, RelativeTime } from '@/components/ui/time'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useDecideReplay, useReplayArrived } from '@/lib/client/use-replays'
import { useCan, useSession } from '@/lib/client/use-session'
import type { ReplayJobDetailDto } from '@/lib/shared/schemas/replay'
import type { SelectionInput } from '@/lib/client/use-replays'
import { ReplayPlanDialog } from './replay-plan-dialog'

const MAX_COMMENT = 2000

/**
 * A job that has not started, or was decided: who asked, why it needs approval, until when; Approve / Reject with a
 * comment for a second operator; for the requester, a note that someone else must approve (docs/security.md#four-eyes).
 * The server decides; this only shows what it would allow.
 */
export function ReplayApprovalPanel({ job }: { job: ReplayJobDetailDto }) {
  const session = useSession()
  const mayApprove = useCan('replays:approve')
  const decide = useDecideReplay(job.id)
  const [comment, setComment] = useState('')
  const waiting = job.status === 'awaiting_approval'
  const isRequester = session?.user?.actor === job.createdBy
  const valid = comment.trim().length > 0 && comment.length <= MAX_COMMENT
  const submit = (verb: 'approve' | 'reject') => valid && !decide.isPending && decide.mutate({ verb, comment: comment.trim() }, { onSuccess: () => setComment('') })

  return (
    <Panel title={waiting ? 'Approval' : job.status === 'scheduled' ? 'Schedule' : 'Approval'}>
      <dl className="grid grid-cols-[8rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-xs" data-testid="approval-facts">
        <dt className="text-zinc-500">Requested by</dt>
        <dd className="truncate font-medium">{visibleText(job.createdBy)}</dd>
        {job.approvalReasons && job.approvalReasons.length > 0 && (
          <>
            <dt className="text-zinc-500">Needs approval</dt>
            <dd>
              <ul className="space-y-0.5" data-testid="approval-reasons">
                {job.approvalReasons.map((r, i) => (
                  <li key={i}>{visibleText(r)}</li>
                ))}
              </ul>
            </dd>
          </>
        )}
        {job.startAt && (
          <>
            <dt className="text-zinc-500">{job.status === 'scheduled' ? 'Starts' : 'Start at'}</dt>
            <dd>
              <AbsoluteTime iso={job.startAt} /> (<RelativeTime iso={job.startAt} />)
            </dd>
          </>
        )}
        {waiting && job.approvalExpiresAt && (
          <>
            <dt className="text-zinc-500">Expires</dt>
            <dd data-testid="approval-expires">
              <AbsoluteTime iso={job.approvalExpiresAt} /> (<RelativeTime iso={job.approvalExpiresAt} />)
            </dd>
          </>
        )}
        {(job.approvedBy || job.rejectedBy) && (
          <>
            <dt className="text-zinc-500">{job.approvedBy ? 'Approved by' : 'Rejected by'}</dt>
            <dd className="truncate">
              <span className="font-medium">{visibleText(job.approvedBy ?? job.rejectedBy ?? '')}</span>
              {job.decisionComment && <span className="text-zinc-600"> — “{visibleText(job.decisionComment)}”</span>}
            </dd>
          </>
        )}
      </dl>
      {(waiting || job.status === 'scheduled') && (
        <p className="mt-2 text-xs text-zinc-500">Until it starts, this replay holds only its list of messages: none is marked replaying and no entity is paused. At the start its targets are checked again; a changed plan needs approval again.</p>
      )}
      {waiting && isRequester && (
        <p data-testid="approval-self-note" className="mt-2 rounded-md border border-violet-200 bg-violet-50/60 px-3 py-2 text-violet-950">
          You requested this replay: a second operator must approve it. Share this page with them.
        </p>
      )}
      {waiting && !isRequester && mayApprove && (
        <form
          className="mt-3 space-y-2"
          aria-label="Decide"
          onSubmit={(e) => {
            e.preventDefault()
            submit('approve')
          }}
        >
          <label className="block text-xs font-medium text-zinc-700" htmlFor="decision-comment">
            Comment (required, kept in the audit log)
          </label>
          <textarea
            id="decision-comment"
            rows={2}
            maxLength={MAX_COMMENT}
            value={comment}
            onChange={(e) => setComment(e.target.value)}
            className={cn(
              'min-h-12 w-full resize-y rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-[13px] placeholder:text-zinc-400 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none',
            )}
            placeholder="e.g. checked the fix is deployed"
          />
          <div className="flex items-center gap-2">
            <Button type="submit" variant="primary" disabled={!valid || decide.isPending}>
              Approve
            </Button>
            <Button variant="danger" disabled={!valid || decide.isPending} onClick={() => submit('reject')}>
              Reject
            </Button>
            {decide.error && <InlineError error={decide.error} />}
          </div>
        </form>
      )}
    </Panel>
  )
}

/** "N arrived since this replay was planned", with a one-click plan of exactly those. */
export function ArrivedSince({ job }: { job: ReplayJobDetailDto }) {
  const applies = job.kind === 'replay' && !('ids' in job.selection)
  const canReplay = useCan('messages:replay')
  const { data, error } = useReplayArrived(job.id, applies)
  const [planning, setPlanning] = useState(false)
  if (!applies || error || !data || data.count === null) return null
  return (
    <p data-testid="arrived-since" className="flex items-center gap-2 rounded-md border border-zinc-200 bg-white px-3 py-2 text-xs text-zinc-700">
      <span>
        <span className="font-semibold tabular-nums">{formatCount(data.count)}</span> {data.count === 1 ? 'message' : 'messages'} of the same {'groupId' in job.selection ? 'group' : 'filter'} arrived since this replay was planned.
      </span>
      {canReplay && data.count > 0 && data.selection && (
        <Button onClick={() => setPlanning(true)} aria-haspopup="dialog">
          Replay these
        </Button>
      )}
      {planning && data.selection && <ReplayPlanDialog selection={data.selection as SelectionInput} subject={`${plural(data.count, 'message')} arrived since replay #${job.id}`} onClose={() => setPlanning(false)} />}
    </p>
  )
}
