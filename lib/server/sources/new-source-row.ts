import 'server-only'
import { jetStreamSourceName, type CreateSourceInput } from '@/lib/shared/schemas/source'
import type { NewSourceRow } from './sources-store'

/** The sources row an input describes: a JetStream source is named `stream/consumer` (or `stream/*`) with no vhost. */
export function newSourceRow(input: CreateSourceInput): NewSourceRow {
  const common = {
    entityKey: input.entityKey ?? null,
    entityVersion: input.entityVersion ?? null,
    critical: input.critical ?? false,
    enabled: input.enabled ?? true,
  }
  if (input.kind === 'jetstream') {
    return { ...common, kind: 'jetstream', vhost: '', queue: jetStreamSourceName(input.stream, input.consumer), stream: input.stream, consumer: input.consumer ?? null, removeAfterCapture: input.removeAfterCapture ?? false, orderSensitive: false, defaultTarget: { type: 'source' } }
  }
  return { ...common, kind: 'dlq', vhost: input.vhost, queue: input.queue, stream: null, consumer: null, removeAfterCapture: false, orderSensitive: input.orderSensitive ?? false, defaultTarget: input.defaultTarget ?? { type: 'source' } }
}
