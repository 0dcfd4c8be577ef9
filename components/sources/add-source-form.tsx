'use client'

import { useState } from 'react'
import { Button } from '@/components/ui/button'
import { Field, Input, Select } from '@/components/ui/fields'
import { ApiError, errorMessage } from '@/lib/client/api'
import { useCreateSource } from '@/lib/client/use-sources'

type Broker = 'rabbitmq' | 'jetstream'

const BROKERS = [
  { value: 'rabbitmq', label: 'RabbitMQ' },
  { value: 'jetstream', label: 'NATS JetStream' },
]

/**
 * Starts draining another DLQ, or capturing a JetStream stream's failures (docs/jetstream.md); the API's validation
 * messages appear under the field they concern.
 */
export function AddSourceForm() {
  const [broker, setBroker] = useState<Broker>('rabbitmq')
  const [queue, setQueue] = useState('')
  const [vhost, setVhost] = useState('/')
  const [stream, setStream] = useState('')
  const [consumer, setConsumer] = useState('')
  const create = useCreateSource()
  const fields = create.error instanceof ApiError ? create.error.fieldErrors() : {}
  // A conflict or a non-field error belongs to the name too: it is the thing to change.
  const general = create.error && !fields.vhost && !fields.consumer ? errorMessage(create.error) : undefined
  const queueError = fields.queue ?? general
  const streamError = fields.stream ?? general
  // The API refused the queue as a likely work queue (or could not check it): the admin may insist, explicitly.
  const confirmable = create.error instanceof ApiError && (create.error.details as { confirmWith?: unknown } | undefined)?.confirmWith === 'confirmNotWorkQueue'
  const submit = (confirmNotWorkQueue: boolean) =>
    broker === 'jetstream'
      ? create.mutate({ kind: 'jetstream', stream, ...(consumer.trim() && { consumer: consumer.trim() }) }, { onSuccess: () => (setStream(''), setConsumer('')) })
      : create.mutate({ queue, vhost: vhost || '/', ...(confirmNotWorkQueue && { confirmNotWorkQueue }) }, { onSuccess: () => setQueue('') })

  return (
    <form
      className="flex flex-wrap items-start gap-2"
      aria-label="Add a source"
      onSubmit={(e) => {
        e.preventDefault()
        submit(false)
      }}
    >
      <Field label="Broker" className="w-48">
        <Select
          className="w-full"
          aria-label="Broker"
          value={broker}
          onChange={(e) => {
            setBroker(e.target.value as Broker)
            create.reset()
          }}
          options={BROKERS}
        />
      </Field>
      {broker === 'rabbitmq' ? (
        <>
          <Field label="Dead-letter queue" error={queueError} className="w-80">
            <Input name="queue" value={queue} onChange={(e) => setQueue(e.target.value)} placeholder="orders.dlq" invalid={Boolean(queueError)} autoComplete="off" />
          </Field>
          <Field label="Virtual host" error={fields.vhost} className="w-32">
            <Input name="vhost" value={vhost} onChange={(e) => setVhost(e.target.value)} invalid={Boolean(fields.vhost)} />
          </Field>
        </>
      ) : (
        <>
          <Field label="Stream" error={streamError} className="w-64">
            <Input name="stream" value={stream} onChange={(e) => setStream(e.target.value)} placeholder="ORDERS" invalid={Boolean(streamError)} autoComplete="off" />
          </Field>
          <Field label="Consumer" error={fields.consumer} hint="empty: all of its consumers" className="w-48">
            <Input name="consumer" value={consumer} onChange={(e) => setConsumer(e.target.value)} placeholder="billing" invalid={Boolean(fields.consumer)} autoComplete="off" />
          </Field>
        </>
      )}
      <Button type="submit" variant="primary" className="mt-[19px]" disabled={create.isPending}>
        {create.isPending ? 'Adding…' : 'Add source'}
      </Button>
      {confirmable && (
        <Button variant="danger" className="mt-[19px]" disabled={create.isPending} onClick={() => submit(true)}>
          It is a dead-letter queue: add it anyway
        </Button>
      )}
      {create.isSuccess && (
        <span className="mt-6 text-xs text-emerald-700">{broker === 'jetstream' ? 'Added; failures are captured from now on.' : 'Added; draining starts within a few seconds.'}</span>
      )}
    </form>
  )
}
