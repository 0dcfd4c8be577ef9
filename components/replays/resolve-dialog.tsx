'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Dialog } from '@/components/ui/dialog'
import { Field } from '@/components/ui/fields'
import { InlineError } from '@/components/ui/states'
import { ApiError } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useResolve, useRestore } from '@/lib/client/use-replays'
import type { SelectionInput } from '@/lib/client/use-replays'

type ResolveDialogProps = {
  selection: SelectionInput
  /** "group #4", "3 selected messages". */
  subject: string
  onClose: () => void
  /** After a successful resolve, when the operator dismisses the result. */
  onDone?: () => void
  /** restore: resolved messages back to dead (the same reason and audit, the other direction). */
  mode?: 'resolve' | 'restore'
}

const WORDS = {
  resolve: { title: 'Resolve without replaying', done: 'Resolved', verb: 'Resolve', doing: 'Resolving…', marked: 'marked resolved', only: 'Only dead messages change.', hint: 'fixed by data migration' },
  restore: { title: 'Restore to dead', done: 'Restored', verb: 'Restore', doing: 'Restoring…', marked: 'dead again', only: 'Only resolved messages change.', hint: 'resolved by mistake' },
} as const

const MAX_REASON = 2000

/**
 * Marks a selection resolved without replaying it, or (`mode="restore"`) makes resolved messages dead again. The reason
 * is required and goes to the audit log.
 */
export function ResolveDialog({ selection, subject, onClose, onDone, mode = 'resolve' }: ResolveDialogProps) {
  const [reason, setReason] = useState('')
  const resolveMutation = useResolve()
  const restoreMutation = useRestore()
  const resolve = mode === 'resolve' ? resolveMutation : restoreMutation
  const words = WORDS[mode]
  const result = resolve.data ? { changed: 'resolved' in resolve.data ? resolve.data.resolved : resolve.data.restored, skipped: resolve.data.skipped, skippedReasons: resolve.data.skippedReasons } : undefined
  const valid = reason.trim().length > 0 && reason.length <= MAX_REASON
  const fieldError = resolve.error instanceof ApiError ? resolve.error.fieldErrors().reason : undefined
  const close = result ? (onDone ?? onClose) : onClose

  if (result) {
    return (
      <Dialog
        title={words.done}
        description={subject}
        onClose={close}
        onSubmit={close}
        footer={
          <Button type="submit" variant="primary" autoFocus>
            Done
          </Button>
        }
      >
        <p data-testid="resolve-result">
          <strong className="tabular-nums">{plural(result.changed, 'message')}</strong> {words.marked}.
          {result.skipped > 0 && ` ${formatCount(result.skipped)} left as they were:`}
        </p>
        {result.skippedReasons.length > 0 && (
          <ul className="mt-1 list-disc pl-5 text-zinc-600">
            {result.skippedReasons.map((r) => (
              <li key={r.reason}>
                {formatCount(r.count)} {visibleText(r.reason)}
              </li>
            ))}
          </ul>
        )}
      </Dialog>
    )
  }

  return (
    <Dialog
      title={words.title}
      description={subject}
      onClose={onClose}
      onSubmit={() => resolve.mutate({ selection, reason: reason.trim() })}
      canSubmit={valid && !resolve.isPending}
      footer={
        <>
          <span className="mr-auto min-w-0 truncate text-xs" aria-live="polite">
            {resolve.error && !fieldError ? <InlineError error={resolve.error} /> : <span className="text-zinc-500">{words.only}</span>}
          </span>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" disabled={!valid || resolve.isPending}>
            {resolve.isPending ? words.doing : words.verb}
          </Button>
        </>
      }
    >
      <Field label="Reason" error={fieldError} hint={`Kept with each message and in the audit log, e.g. “${words.hint}”. Shift+Enter for a new line.`}>
        <textarea
          data-autofocus
          required
          rows={3}
          maxLength={MAX_REASON}
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          aria-invalid={Boolean(fieldError) || undefined}
          className={cn(
            'min-h-16 resize-y rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-[13px] placeholder:text-zinc-400 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none',
            fieldError && 'border-red-400',
          )}
          placeholder="Reason (required)"
        />
      </Field>
    </Dialog>
  )
}
