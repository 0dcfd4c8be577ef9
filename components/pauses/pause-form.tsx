'use client'

import { useState } from 'react'
import { ruleText } from '@/components/sources/rule-text'
import { Button } from '@/components/ui/button'
import { Checkbox, Field, Input, Select } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { visibleText } from '@/lib/client/format'
import { useCreatePause, useGuardStatus } from '@/lib/client/use-pauses'
import { useSourceOptions, useSources } from '@/lib/client/use-sources'
import { GuardCount, NoGuardWarning } from './guard-count'

/** What a "Pause this entity" link fills in (the pauses page's URL: source, queue, entity). */
type PausePrefill = { sourceId?: string; queue?: string; entityKey?: string }

/** Who listens on the queue the pause would take (the one typed, or the source's default), and the source's rule. */
export function QueueFacts({ sourceId, queue }: { sourceId: string; queue: string }) {
  const sources = useSources()
  const guards = useGuardStatus({ sourceId, queue: queue || null })
  const source = sources.data?.sources.find((s) => s.id === sourceId)
  const target = guards.data?.queues[0]
  return (
    <div className="basis-full space-y-1.5" data-testid="pause-queue-facts">
      <p className="flex flex-wrap items-baseline gap-x-3 gap-y-0.5 text-xs text-zinc-500">
        {source && (
          <span>
            entity key by <span className="font-mono text-zinc-700">{source.entityKey ? ruleText(source.entityKey) : 'header x-entity-key'}</span> (the source&apos;s rule)
          </span>
        )}
        {target ? (
          <span>
            on <span className="font-mono text-zinc-700">{visibleText(target.queue)}</span>: <GuardCount counts={target} />
          </span>
        ) : guards.isPending ? (
          <span className="text-zinc-400">counting guards…</span>
        ) : guards.error ? (
          <span className="text-red-700">could not count guards: {errorMessage(guards.error)}</span>
        ) : (
          <span>no consumer queue known for this source: name one</span>
        )}
      </p>
      {target && <NoGuardWarning counts={target} queue={target.queue} />}
    </div>
  )
}

/**
 * Pauses one entity (or a whole consumer queue) by hand. Guards in front of that queue's consumers then hold
 * the entity's messages until it is resumed. `prefill` comes from a "Pause this entity" link; the form is keyed on it.
 */
export function PauseForm({ prefill = {} }: { prefill?: PausePrefill }) {
  const { options, isPending: sourcesPending } = useSourceOptions()
  const create = useCreatePause()
  const [sourceId, setSourceId] = useState(prefill.sourceId ?? '')
  const [queue, setQueue] = useState(prefill.queue ?? '')
  /** The queue guards are counted on: the typed one once the field is left, not at every keystroke. */
  const [countedQueue, setCountedQueue] = useState(prefill.queue ?? '')
  const [entityKey, setEntityKey] = useState(prefill.entityKey ?? '')
  const [wholeQueue, setWholeQueue] = useState(false)
  const [reason, setReason] = useState('')
  const [tried, setTried] = useState(false)

  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  const local = {
    sourceId: tried && !sourceId ? 'choose the source' : undefined,
    entityKey: tried && !wholeQueue && !entityKey ? 'an entity key, or pause the whole queue' : undefined,
    reason: tried && !reason.trim() ? 'a reason is required' : undefined,
  }
  const known = ['sourceId', 'queue', 'entityKey', 'reason']
  const other = create.error && !Object.keys(fields).some((k) => known.includes(k)) ? errorMessage(create.error) : null

  const submit = () => {
    setTried(true)
    if (!sourceId || (!wholeQueue && !entityKey) || !reason.trim()) return
    create.mutate(
      { sourceId, queue: queue.trim() || undefined, entityKey: wholeQueue ? null : entityKey, reason: reason.trim() },
      {
        onSuccess: () => {
          setEntityKey('')
          setReason('')
          setTried(false)
        },
      },
    )
  }

  return (
    <form
      aria-label="Pause an entity"
      className="flex flex-wrap items-start gap-2"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
    >
      <Field label="Source" error={local.sourceId ?? fields.sourceId} className="w-52">
        <Select
          value={sourceId}
          onChange={(e) => setSourceId(e.target.value)}
          options={options}
          placeholder={sourcesPending ? 'Loading…' : 'Choose a source'}
          invalid={Boolean(local.sourceId ?? fields.sourceId)}
          className="max-w-none"
        />
      </Field>
      <Field label="Consumer queue" error={fields.queue} hint="empty: where most of its messages failed" className="w-56">
        <Input value={queue} onChange={(e) => setQueue(e.target.value)} onBlur={() => setCountedQueue(queue.trim())} placeholder="orders.work" maxLength={255} invalid={Boolean(fields.queue)} autoComplete="off" />
      </Field>
      <Field label="Entity key" error={local.entityKey ?? fields.entityKey} className="w-60">
        <Input
          value={wholeQueue ? '' : entityKey}
          onChange={(e) => setEntityKey(e.target.value)}
          placeholder={wholeQueue ? 'whole queue' : 'ORDER-1042'}
          disabled={wholeQueue}
          maxLength={1024}
          invalid={Boolean(local.entityKey ?? fields.entityKey)}
          autoComplete="off"
        />
      </Field>
      <label className="mt-[25px] flex items-center gap-1.5 text-xs text-zinc-700">
        <Checkbox checked={wholeQueue} onChange={(e) => setWholeQueue(e.target.checked)} />
        Whole queue
      </label>
      <Field label="Reason" error={local.reason ?? fields.reason} className="min-w-60 flex-1">
        <Input
          // Prefilled from a message or an entity: the reason is what is left to say.
          autoFocus={Boolean(prefill.entityKey)}
          value={reason} onChange={(e) => setReason(e.target.value)} placeholder="why, for the people who will see it" maxLength={2000} invalid={Boolean(local.reason ?? fields.reason)} />
      </Field>
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending}>
        {create.isPending ? 'Pausing…' : 'Pause'}
      </Button>
      {sourceId && <QueueFacts sourceId={sourceId} queue={countedQueue} />}
      {other && (
        <p role="alert" className="basis-full text-xs text-red-700">
          {other}
        </p>
      )}
    </form>
  )
}
