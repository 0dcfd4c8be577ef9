'use client'

import { useState } from 'react'
import { Field, Input } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState } from '@/components/ui/states'
import { SaveDiscard } from './save-discard'
import { RelativeTime } from '@/components/ui/time'
import { formatCount, visibleText } from '@/lib/client/format'
import { useReplayConfirmSettings, useSaveReplayConfirmSettings } from '@/lib/client/use-replays'
import { MAX_LARGE_JOB_MESSAGES } from '@/lib/shared/schemas/replay-confirm'

const parse = (text: string): number | null => {
  if (!/^\d{1,8}$/.test(text.trim())) return null
  const n = Number(text)
  return n >= 1 && n <= MAX_LARGE_JOB_MESSAGES ? n : null
}

type Draft = { large: string; staged: string }

/** A size in messages: its unit beside it, its error under it, so the row's inputs stay level whichever errs. */
function SizeField({ label, name, value, error, onChange }: { label: string; name: string; value: string; error: string | undefined; onChange: (e: { target: { value: string } }) => void }) {
  return (
    <Field label={label} error={error} className="w-52">
      <span className="flex items-center gap-2">
        <Input inputMode="numeric" value={value} invalid={error !== undefined} onChange={onChange} aria-label={name} className="w-32" />
        <span className="text-xs text-zinc-500">messages</span>
      </span>
    </Field>
  )
}

/**
 * From how many messages a replay needs its count typed to start (sent as confirmCount through the API), and from how
 * many the plan dialog offers it staged (canary, window, ramps: docs/operations.md#staged-replays). One form, one Save.
 */
export function ReplayConfirmSettings() {
  const query = useReplayConfirmSettings()
  const save = useSaveReplayConfirmSettings()
  const [draft, setDraft] = useState<Draft | null>(null)
  if (query.error) return <ErrorState title="Could not load the replay confirmation setting" error={query.error} onRetry={() => void query.refetch()} />
  const stored: Draft = query.data ? { large: String(query.data.largeJobMessages), staged: String(query.data.stagedFromMessages) } : { large: '', staged: '' }
  const shown = draft ?? stored
  const large = parse(shown.large)
  const staged = parse(shown.staged)
  const edit = (key: keyof Draft) => (e: { target: { value: string } }) => setDraft({ ...shown, [key]: e.target.value })
  const dirty = draft !== null && (draft.large !== stored.large || draft.staged !== stored.staged)
  const invalidLarge = draft !== null && large === null
  const invalidStaged = draft !== null && staged === null
  const rangeError = `a whole number from 1 to ${formatCount(MAX_LARGE_JOB_MESSAGES)}`
  const submit = () => {
    if (large !== null && staged !== null && dirty) save.mutate({ largeJobMessages: large, stagedFromMessages: staged }, { onSuccess: () => setDraft(null) })
  }
  return (
    <Panel title="Large replays">
      <p className="mb-2 text-xs text-zinc-500">
        A replay of at least the first size starts only once its count is typed in the plan; API clients send it as <code>confirmCount</code>. From the
        second, the plan dialog offers the replay staged (a canary, an observation window, then ramps) with the defaults switched on; smaller ones can
        still be staged by hand.
      </p>
      {query.isPending ? (
        <Skeleton className="h-[52px] w-[28rem]" />
      ) : (
        <form
          className="flex flex-wrap items-start gap-x-4 gap-y-2"
          onSubmit={(e) => {
            e.preventDefault()
            submit()
          }}
        >
          <SizeField label="Confirm the count from" name="Large replay size (messages)" value={shown.large} error={invalidLarge ? rangeError : undefined} onChange={edit('large')} />
          <SizeField label="Offer staging from" name="Staged replay size (messages)" value={shown.staged} error={invalidStaged ? rangeError : undefined} onChange={edit('staged')} />
          <div className="mt-5 flex items-center gap-2">
            <SaveDiscard dirty={draft !== null} disabled={large === null || staged === null || !dirty} saving={save.isPending} error={save.error} onDiscard={() => setDraft(null)} />
          </div>
        </form>
      )}
      {query.data && (
        <p className="mt-2 text-xs text-zinc-500">
          {query.data.updatedAt ? (
            <>
              Set by {visibleText(query.data.updatedBy ?? 'unknown')} <RelativeTime iso={query.data.updatedAt} />.
            </>
          ) : (
            'The default: never changed.'
          )}
        </p>
      )}
    </Panel>
  )
}
