'use client'

import { useState } from 'react'
import { Checkbox, Field, Input } from '@/components/ui/fields'
import { Panel } from '@/components/ui/panel'
import { Skeleton } from '@/components/ui/skeleton'
import { ErrorState } from '@/components/ui/states'
import { RelativeTime } from '@/components/ui/time'
import { formatCount, visibleText } from '@/lib/client/format'
import { useReplayApprovalSettings, useSaveReplayApprovalSettings } from '@/lib/client/use-replays'
import { MAX_APPROVAL_TTL_SECONDS, type UpdateReplayApprovalSettingsInput } from '@/lib/shared/schemas/replay-approval'
import { SaveDiscard } from './save-discard'

type Draft = { above: string; editedMessages: boolean; customTarget: boolean; criticalSources: boolean; ttlHours: string }

const parseAbove = (text: string): number | null | undefined => {
  if (text.trim() === '') return null
  return /^\d{1,9}$/.test(text.trim()) && Number(text) <= 100_000_000 ? Number(text) : undefined
}
const parseTtl = (text: string): number | null | undefined => {
  if (text.trim() === '') return null
  const hours = Number(text)
  const seconds = Math.round(hours * 3600)
  return Number.isFinite(hours) && seconds >= 1 && seconds <= MAX_APPROVAL_TTL_SECONDS ? seconds : undefined
}

/**
 * The four-eyes policy (docs/security.md#four-eyes): which replays need a second operator's approval, and how long a
 * request waits. Everything off until an admin turns it on.
 */
export function ReplayApprovalSettings() {
  const query = useReplayApprovalSettings()
  const save = useSaveReplayApprovalSettings()
  const [draft, setDraft] = useState<Draft | null>(null)
  if (query.error) return <ErrorState title="Could not load the replay approval policy" error={query.error} onRetry={() => void query.refetch()} />
  const stored = query.data
  const current: Draft | null =
    draft ??
    (stored
      ? {
          above: stored.aboveMessages === null ? '' : String(stored.aboveMessages),
          editedMessages: stored.editedMessages,
          customTarget: stored.customTarget,
          criticalSources: stored.criticalSources,
          ttlHours: stored.ttlSeconds === null ? '' : String(+(stored.ttlSeconds / 3600).toFixed(4)),
        }
      : null)
  const above = current ? parseAbove(current.above) : null
  const ttl = current ? parseTtl(current.ttlHours) : null
  const set = (patch: Partial<Draft>) => current && setDraft({ ...current, ...patch })
  const submit = () => {
    if (!current || above === undefined || ttl === undefined) return
    const input: UpdateReplayApprovalSettingsInput = { aboveMessages: above, editedMessages: current.editedMessages, customTarget: current.customTarget, criticalSources: current.criticalSources, ttlSeconds: ttl }
    save.mutate(input, { onSuccess: () => setDraft(null) })
  }
  return (
    <Panel title="Replay approval (four eyes)">
      <p className="mb-2 text-xs text-zinc-500">Replays that meet any rule turned on here wait until a second operator, not the requester, approves them on the replay&rsquo;s page. API tokens cannot approve.</p>
      {!current ? (
        <Skeleton className="h-[132px] w-full" />
      ) : (
        <form
          className="space-y-2"
          aria-label="Replay approval policy"
          onSubmit={(e) => {
            e.preventDefault()
            submit()
          }}
        >
          <div className="flex items-end gap-2">
            <Field label="Replays of more than" error={above === undefined ? 'a whole number, or empty for no size rule' : undefined} className="w-48">
              <Input inputMode="numeric" value={current.above} invalid={above === undefined} onChange={(e) => set({ above: e.target.value })} placeholder="no size rule" aria-label="Approval above (messages)" />
            </Field>
            <span className="pb-1.5 text-xs text-zinc-500">messages</span>
          </div>
          <label className="flex items-center gap-2 text-[13px]">
            <Checkbox checked={current.editedMessages} onChange={(e) => set({ editedMessages: e.target.checked })} /> Replays of edited messages
          </label>
          <label className="flex items-center gap-2 text-[13px]">
            <Checkbox checked={current.customTarget} onChange={(e) => set({ customTarget: e.target.checked })} /> Replays to a custom target
          </label>
          <label className="flex items-center gap-2 text-[13px]">
            <Checkbox checked={current.criticalSources} onChange={(e) => set({ criticalSources: e.target.checked })} /> Replays of sources marked critical (Sources)
          </label>
          <div className="flex items-end gap-2">
            <Field label="A request expires after" error={ttl === undefined ? `hours, up to ${formatCount(MAX_APPROVAL_TTL_SECONDS / 3600)}` : undefined} className="w-48">
              <Input inputMode="decimal" value={current.ttlHours} invalid={ttl === undefined} onChange={(e) => set({ ttlHours: e.target.value })} placeholder={stored ? String(+(stored.effectiveTtlSeconds / 3600).toFixed(4)) : ''} aria-label="Approval expiry (hours)" />
            </Field>
            <span className="pb-1.5 text-xs text-zinc-500">hours (empty: LAZARUS_REPLAY_APPROVAL_TTL_H)</span>
            <span className="ml-auto flex items-center gap-2">
              <SaveDiscard dirty={draft !== null} disabled={above === undefined || ttl === undefined} saving={save.isPending} error={save.error} onDiscard={() => setDraft(null)} />
            </span>
          </div>
        </form>
      )}
      {stored && (
        <p className="mt-2 text-xs text-zinc-500">
          {stored.updatedAt ? (
            <>
              Set by {visibleText(stored.updatedBy ?? 'unknown')} <RelativeTime iso={stored.updatedAt} />.
            </>
          ) : (
            'Off: no replay needs approval.'
          )}
        </p>
      )}
    </Panel>
  )
}
