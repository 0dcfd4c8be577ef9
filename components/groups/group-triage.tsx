'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input, Select } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { ApiError, errorMessage } from '@/lib/client/api'
import { cn } from '@/lib/client/cn'
import { visibleText } from '@/lib/client/format'
import { useUpdateGroupTriage } from '@/lib/client/use-group-triage'
import { useCan } from '@/lib/client/use-session'
import { GROUP_STATUSES, type GroupDto, type UpdateGroupInput } from '@/lib/shared/schemas/group'

type Draft = { status: string; note: string; ticketUrl: string }

const STATUS_HINTS: Record<string, string> = {
  open: 'needs someone to look at it',
  acknowledged: 'someone is on it',
  resolved: 'fixed; reopens when it fails again',
  muted: 'known and accepted; never alerts',
}

const draftOf = (group: Pick<GroupDto, 'status' | 'note' | 'ticketUrl'>): Draft => ({ status: group.status, note: group.note ?? '', ticketUrl: group.ticketUrl ?? '' })
const same = (a: Draft, b: Draft) => a.status === b.status && a.note === b.note && a.ticketUrl === b.ticketUrl

/** Only what changed, with an emptied note or ticket link sent as null (cleared). */
function changes(from: Draft, to: Draft): UpdateGroupInput {
  const input: UpdateGroupInput = {}
  if (to.status !== from.status) input.status = to.status as UpdateGroupInput['status']
  if (to.note !== from.note) input.note = to.note.trim() ? to.note : null
  if (to.ticketUrl !== from.ticketUrl) input.ticketUrl = to.ticketUrl.trim() ? to.ticketUrl.trim() : null
  return input
}

/**
 * An operator's triage of a group: status, a note for colleagues and a ticket link, saved together (PATCH
 * /api/groups/{id}); the API's validation messages appear under the field they concern. Edits in progress
 * survive the page's polling; when nothing is being edited, the form follows what the server says.
 */
export function GroupTriage({ group, className }: { group: Pick<GroupDto, 'id' | 'status' | 'note' | 'ticketUrl'>; className?: string }) {
  const save = useUpdateGroupTriage(group.id)
  const canTriage = useCan('groups:triage')
  const server = draftOf(group)
  const [base, setBase] = useState(server)
  const [draft, setDraft] = useState(server)
  // The server's state moved (our save, a colleague, a reopen): follow it unless there are unsaved edits.
  if (!same(base, server)) {
    setBase(server)
    if (same(draft, base)) setDraft(server)
  }
  const dirty = !same(draft, server)
  const fields = save.error instanceof ApiError ? save.error.fieldErrors() : {}
  const other = save.error && !fields.status && !fields.note && !fields.ticketUrl ? errorMessage(save.error) : null
  const ticket = group.ticketUrl && /^https?:\/\//i.test(group.ticketUrl) ? group.ticketUrl : null

  const submit = () => {
    if (!dirty || save.isPending) return
    // The server trims the note: take its answer as the new draft, so a trailing newline does not stay "unsaved".
    save.mutate(changes(server, draft), { onSuccess: (updated) => setDraft(draftOf(updated)) })
  }
  const edit = (patch: Partial<Draft>) => {
    setDraft((d) => ({ ...d, ...patch }))
    if (save.isSuccess) save.reset()
  }

  return (
    <Panel
      title="Triage"
      className={className}
      actions={
        ticket ? (
          <a href={ticket} target="_blank" rel="noopener noreferrer" className="max-w-56 truncate text-xs text-brand hover:underline" title={visibleText(ticket)} data-testid="ticket-link">
            Open ticket ↗
          </a>
        ) : null
      }
    >
      <form
        aria-label="Triage"
        noValidate
        className="space-y-2"
        aria-readonly={!canTriage || undefined}
        onSubmit={(e) => {
          e.preventDefault()
          submit()
        }}
      >
        <fieldset disabled={!canTriage} className="space-y-2">
        <div className="flex items-start gap-2">
          <Field label="Status" error={fields.status} className="w-44 shrink-0">
            <Select
              value={draft.status}
              title={STATUS_HINTS[draft.status]}
              onChange={(e) => edit({ status: e.target.value })}
              options={GROUP_STATUSES.map((s) => ({ value: s, label: s }))}
              invalid={Boolean(fields.status)}
              className="max-w-none"
            />
          </Field>
          <Field label="Ticket link" error={fields.ticketUrl} className="flex-1">
            <Input
              type="url"
              value={draft.ticketUrl}
              onChange={(e) => edit({ ticketUrl: e.target.value })}
              placeholder="https://tracker.example.com/PROJ-123"
              maxLength={2048}
              invalid={Boolean(fields.ticketUrl)}
              autoComplete="off"
              spellCheck={false}
            />
          </Field>
        </div>
        <Field label="Note" error={fields.note}>
          <textarea
            value={draft.note}
            onChange={(e) => edit({ note: e.target.value })}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) {
                e.preventDefault()
                submit()
              }
            }}
            rows={2}
            maxLength={10_000}
            placeholder="What is known, who is on it, what to do with these messages"
            aria-invalid={Boolean(fields.note) || undefined}
            className={cn(
              'min-h-12 resize-y rounded-md border border-zinc-300 bg-white px-2 py-1 text-[13px] leading-5 text-zinc-900 placeholder:text-zinc-400 focus:border-brand focus:ring-2 focus:ring-brand/20 focus:outline-none',
              fields.note && 'border-red-400',
            )}
          />
        </Field>
        </fieldset>
        {canTriage && (
        <div className="flex h-7 items-center gap-2">
          <Button type="submit" variant="primary" disabled={!dirty || save.isPending}>
            {save.isPending ? 'Saving…' : 'Save'}
          </Button>
          {dirty && (
            <Button
              variant="ghost"
              onClick={() => {
                setDraft(server)
                save.reset()
              }}
            >
              Discard
            </Button>
          )}
          <span className="ml-auto min-w-0 truncate text-xs" aria-live="polite">
            {other ? (
              <span role="alert" className="text-red-700">
                {other}
              </span>
            ) : save.isSuccess && !dirty ? (
              <span className="text-emerald-700">Saved</span>
            ) : dirty ? (
              <span className="text-zinc-500" title="Ctrl+Enter (⌘+Enter) in the note saves too">
                Unsaved changes
              </span>
            ) : null}
          </span>
        </div>
        )}
      </form>
    </Panel>
  )
}
