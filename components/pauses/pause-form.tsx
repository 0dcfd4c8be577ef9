'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Checkbox, Field, Input, Select } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { useCreatePause } from '@/lib/client/use-pauses'
import { useSourceOptions } from '@/lib/client/use-sources'

/**
 * Pauses one entity (or a whole consumer queue) by hand. Guards in front of that queue's consumers then hold
 * the entity's messages until it is resumed.
 */
export function PauseForm() {
  const { options, isPending: sourcesPending } = useSourceOptions()
  const create = useCreatePause()
  const [sourceId, setSourceId] = useState('')
  const [queue, setQueue] = useState('')
  const [entityKey, setEntityKey] = useState('')
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
        <Input value={queue} onChange={(e) => setQueue(e.target.value)} placeholder="orders.work" maxLength={255} invalid={Boolean(fields.queue)} autoComplete="off" />
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
        <Input value={reason} onChange={(e) => setReason(e.target.value)} placeholder="why, for the people who will see it" maxLength={2000} invalid={Boolean(local.reason ?? fields.reason)} />
      </Field>
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending}>
        {create.isPending ? 'Pausing…' : 'Pause'}
      </Button>
      {other && (
        <p role="alert" className="basis-full text-xs text-red-700">
          {other}
        </p>
      )}
    </form>
  )
}
