'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { useCreateSource } from '@/lib/client/use-sources'

/** Starts draining another DLQ; the API's validation messages appear under the field they concern. */
export function AddSourceForm() {
  const [queue, setQueue] = useState('')
  const [vhost, setVhost] = useState('/')
  const create = useCreateSource()
  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  // A conflict or a non-field error belongs to the queue name too: it is the thing to change.
  const queueError = fields.queue ?? (create.error && !fields.vhost ? errorMessage(create.error) : undefined)
  // The API refused the queue as a likely work queue (or could not check it): the admin may insist, explicitly.
  const confirmable = create.error instanceof ApiError && (create.error.details as { confirmWith?: unknown } | undefined)?.confirmWith === 'confirmNotWorkQueue'
  const submit = (confirmNotWorkQueue: boolean) =>
    create.mutate({ queue, vhost: vhost || '/', ...(confirmNotWorkQueue && { confirmNotWorkQueue }) }, { onSuccess: () => setQueue('') })

  return (
    <form
      className="flex flex-wrap items-start gap-2"
      aria-label="Add a source"
      onSubmit={(e) => {
        e.preventDefault()
        submit(false)
      }}
    >
      <Field label="Dead-letter queue" error={queueError} className="w-80">
        <Input name="queue" value={queue} onChange={(e) => setQueue(e.target.value)} placeholder="orders.dlq" invalid={Boolean(queueError)} autoComplete="off" />
      </Field>
      <Field label="Virtual host" error={fields.vhost} className="w-32">
        <Input name="vhost" value={vhost} onChange={(e) => setVhost(e.target.value)} invalid={Boolean(fields.vhost)} />
      </Field>
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending}>
        {create.isPending ? 'Adding…' : 'Add source'}
      </Button>
      {confirmable && (
        <Button variant="danger" className="mt-[19px]" disabled={create.isPending} onClick={() => submit(true)}>
          It is a dead-letter queue: add it anyway
        </Button>
      )}
      {create.isSuccess && <span className="mt-6 text-xs text-emerald-700">Added; draining starts within a few seconds.</span>}
    </form>
  )
}
