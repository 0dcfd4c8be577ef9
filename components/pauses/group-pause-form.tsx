'use client'

import Link from 'next/link'
import { useMemo, useState } from 'react'
import { Button } from '@/components/ui/button'
import { Checkbox, Field, Input } from '@/components/ui/fields'
import { EmptyState, ErrorState } from '@/components/ui/states'
import { ApiError, errorMessage } from '@/lib/client/api'
import { formatCount, plural, visibleText } from '@/lib/client/format'
import { useMessages } from '@/lib/client/use-messages'
import { useCreatePause, usePauses } from '@/lib/client/use-pauses'
import { useSources } from '@/lib/client/use-sources'
import { QueueFacts } from './pause-form'

/** How many of the group's newest dead messages are read to find the entities it touches. */
const SAMPLE = 200
/** At most this many entities are offered: a group touching more is a queue to pause whole, not entity by entity. */
const MAX_ENTITIES = 50

/** An entity on the queue its messages failed in (null: not recorded, so the source's usual consumer queue). */
type Entity = { sourceId: string; queue: string | null; entityKey: string; messages: number }
type Outcome = { paused: number; already: number; failed: { entity: Entity; error: unknown }[] }

const entityId = (e: Pick<Entity, 'sourceId' | 'queue' | 'entityKey'>) => JSON.stringify([e.sourceId, e.queue, e.entityKey])
const queueId = (e: Pick<Entity, 'sourceId' | 'queue'>) => JSON.stringify([e.sourceId, e.queue])

/**
 * "Pause these entities" for an error group: the entities its newest dead messages belong to, each paused with the
 * existing POST /api/pauses on the queue its messages failed in (as "Pause this entity" on a message does), one reason
 * for all. Already paused entities are counted, not failures.
 */
export function GroupPauseForm({ groupId }: { groupId: string }) {
  const messages = useMessages({ group: groupId, status: 'dead', limit: String(SAMPLE) })
  const sources = useSources()
  const open = usePauses('active')
  const create = useCreatePause()
  const [skipped, setSkipped] = useState<Set<string>>(new Set())
  const [reason, setReason] = useState('')
  const [tried, setTried] = useState(false)
  const [running, setRunning] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | null>(null)

  const firstPage = messages.data?.pages[0]?.messages
  const { entities, withoutKey } = useMemo(() => {
    const found = new Map<string, Entity>()
    let withoutKey = 0
    for (const m of firstPage ?? []) {
      if (m.entityKey === null) {
        withoutKey++
        continue
      }
      const entity = { sourceId: m.source.id, queue: m.originQueue, entityKey: m.entityKey }
      const known = found.get(entityId(entity))
      if (known) known.messages++
      else found.set(entityId(entity), { ...entity, messages: 1 })
    }
    return { entities: [...found.values()].slice(0, MAX_ENTITIES), withoutKey }
  }, [firstPage])
  const chosen = entities.filter((e) => !skipped.has(entityId(e)))
  /** The queues the chosen entities are paused on, each with its guard count. */
  const queues = [...new Map(chosen.map((e) => [queueId(e), e])).values()]
  /** Entities an open pause already covers on their queue (pausing them again answers 409); an entity whose queue is
   * not recorded counts as paused when its source has it paused on any queue. */
  const entityPauses = (open.data?.pauses ?? []).filter((p) => p.entityKey !== null && p.sourceId !== null)
  const paused = new Set(entityPauses.map((p) => entityId({ sourceId: p.sourceId!, queue: p.queue, entityKey: p.entityKey! })))
  const pausedOnAnyQueue = new Set(entityPauses.map((p) => entityId({ sourceId: p.sourceId!, queue: null, entityKey: p.entityKey! })))
  const isPaused = (e: Entity) => (e.queue === null ? pausedOnAnyQueue : paused).has(entityId(e))
  const sourceQueue = (id: string) => sources.data?.sources.find((s) => s.id === id)?.queue ?? `source ${id}`

  const submit = async () => {
    setTried(true)
    if (!reason.trim() || chosen.length === 0) return
    setRunning(true)
    const result: Outcome = { paused: 0, already: 0, failed: [] }
    // One at a time, in list order: each is its own pause (and audit entry), as if made by hand.
    for (const entity of chosen) {
      try {
        await create.mutateAsync({ sourceId: entity.sourceId, ...(entity.queue === null ? {} : { queue: entity.queue }), entityKey: entity.entityKey, reason: reason.trim() })
        result.paused++
      } catch (error) {
        if (error instanceof ApiError && error.status === 409) result.already++
        else result.failed.push({ entity, error })
      }
    }
    setOutcome(result)
    setRunning(false)
  }

  if (messages.error && !messages.data) return <ErrorState title="Could not read the group's messages" error={messages.error} onRetry={() => void messages.refetch()} />
  if (messages.isPending) return <p className="text-xs text-zinc-400">Finding the entities of group #{groupId}…</p>
  if (entities.length === 0) {
    return (
      <EmptyState title="No entity to pause">
        None of the newest {formatCount(SAMPLE)} dead messages of group #{groupId} has an entity key
        {withoutKey > 0 ? ` (${plural(withoutKey, 'message')} without one)` : ''}. Pause the whole queue below instead, or set the source&apos;s entity-key rule.
      </EmptyState>
    )
  }

  return (
    <form
      aria-label="Pause the entities of a group"
      className="space-y-2"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        void submit()
      }}
    >
      <p className="text-xs text-zinc-600">
        The entities of the newest {formatCount(SAMPLE)} dead messages of{' '}
        <Link href={`/groups/${groupId}`} className="text-brand hover:underline">
          group #{groupId}
        </Link>
        {entities.length === MAX_ENTITIES ? ` (the first ${MAX_ENTITIES})` : ''}; each is paused on the queue its messages failed in.
      </p>
      <ul className="grid max-h-56 grid-cols-1 gap-x-4 gap-y-0.5 overflow-auto rounded-md border border-zinc-200 bg-white p-2 sm:grid-cols-2 xl:grid-cols-3" data-testid="group-entities">
        {entities.map((e) => {
          const id = entityId(e)
          return (
            <li key={id}>
              <label className="flex min-w-0 items-center gap-1.5 text-xs">
                <Checkbox
                  checked={!skipped.has(id)}
                  onChange={(ev) => {
                    const next = new Set(skipped)
                    if (ev.target.checked) next.delete(id)
                    else next.add(id)
                    setSkipped(next)
                  }}
                />
                <span className="truncate font-mono" title={visibleText(e.entityKey)}>
                  {visibleText(e.entityKey)}
                </span>
                <span className="shrink-0 text-zinc-400">
                  {plural(e.messages, 'message')} · {e.queue === null ? `${visibleText(sourceQueue(e.sourceId))}'s consumer queue` : visibleText(e.queue)}
                </span>
                {isPaused(e) && <span className="shrink-0 text-amber-700">paused</span>}
              </label>
            </li>
          )
        })}
      </ul>
      {queues.map((q) => (
        <QueueFacts key={queueId(q)} sourceId={q.sourceId} queue={q.queue ?? ''} />
      ))}
      <div className="flex flex-wrap items-start gap-2">
        <Field label="Reason" error={tried && !reason.trim() ? 'a reason is required' : undefined} className="min-w-60 flex-1">
          <Input value={reason} onChange={(e) => setReason(e.target.value)} placeholder="why, for the people who will see it" maxLength={2000} invalid={tried && !reason.trim()} />
        </Field>
        <Button type="submit" variant="primary" className="mt-[19px]" disabled={running || chosen.length === 0}>
          {running ? 'Pausing…' : `Pause ${plural(chosen.length, 'entity', 'entities')}`}
        </Button>
      </div>
      {outcome && (
        <div role="status" className="text-xs text-zinc-700" data-testid="group-pause-outcome">
          {plural(outcome.paused, 'entity', 'entities')} paused
          {outcome.already > 0 && `, ${formatCount(outcome.already)} already paused`}
          {outcome.failed.length > 0 && <span className="text-red-700">, {formatCount(outcome.failed.length)} failed</span>}.
          {outcome.failed.map(({ entity, error }) => (
            <p key={entityId(entity)} className="text-red-700">
              <span className="font-mono">{visibleText(entity.entityKey)}</span>: {errorMessage(error)}
            </p>
          ))}
        </div>
      )}
    </form>
  )
}
