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

/** From how many messages a replay needs its count typed to start (and sent as confirmCount through the API). */
export function ReplayConfirmSettings() {
  const query = useReplayConfirmSettings()
  const save = useSaveReplayConfirmSettings()
  const [draft, setDraft] = useState<string | null>(null)
  if (query.error) return <ErrorState title="Could not load the replay confirmation setting" error={query.error} onRetry={() => void query.refetch()} />
  const text = draft ?? (query.data ? String(query.data.largeJobMessages) : '')
  const value = parse(text)
  const invalid = draft !== null && value === null
  const submit = () => {
    if (value !== null && draft !== null) save.mutate(value, { onSuccess: () => setDraft(null) })
  }
  return (
    <Panel title="Large replays">
      <p className="mb-2 text-xs text-zinc-500">
        A replay of at least this many messages starts only once its count is typed in the plan; API clients send it as <code>confirmCount</code>.
      </p>
      {query.isPending ? (
        <Skeleton className="h-[52px] w-64" />
      ) : (
        <form
          className="flex items-end gap-2"
          onSubmit={(e) => {
            e.preventDefault()
            submit()
          }}
        >
          <Field label="Confirm the count from" error={invalid ? `a whole number from 1 to ${formatCount(MAX_LARGE_JOB_MESSAGES)}` : undefined} className="w-48">
            <Input inputMode="numeric" value={text} invalid={invalid} onChange={(e) => setDraft(e.target.value)} aria-label="Large replay size (messages)" />
          </Field>
          <span className="pb-1.5 text-xs text-zinc-500">messages</span>
          <SaveDiscard dirty={draft !== null} disabled={value === null} saving={save.isPending} error={save.error} onDiscard={() => setDraft(null)} />
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
