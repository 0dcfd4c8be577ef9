import 'server-only'
import { z } from 'zod'
import { DRAIN_CONSUMER_TAG_PREFIX } from './consumer-tag'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { getJson, isManagementNotFound } from '@/lib/server/platform/broker/management-api'

/** RabbitMQ renders an empty table as [] in some places and versions; read both as "no keys". */
const table = z.preprocess((v) => (Array.isArray(v) || v === null ? {} : v), z.record(z.string(), z.unknown()))

const queueDetailsSchema = z.object({
  consumers: z.number().optional(),
  consumer_details: z.array(z.object({ consumer_tag: z.string() })).optional(),
  arguments: table.optional(),
  effective_policy_definition: table.optional(),
  message_stats: z.object({ ack: z.number(), deliver_no_ack: z.number(), get_no_ack: z.number() }).partial().optional(),
})

/** One reason to believe a queue is not a terminal DLQ, as the refusal's `details.evidence` lists it. */
export type WorkQueueEvidence = { kind: 'other-consumers' | 'consumed' | 'moves-on' | 'queue-missing'; message: string } & Record<string, unknown>

export type CheckSourceQueueOptions = {
  vhost: string
  queue: string
  /** The source has stored messages before: past acks on the queue are Lazarus' own, not evidence. */
  drainedBefore: boolean
}

/**
 * Evidence from the management API (GET /api/queues/{vhost}/{name}) that a queue is a live work queue, which a drainer
 * would rob of its messages. A queue cannot be recognised as a DLQ by its arguments: DLX edges fill some, frameworks
 * publish into others (MassTransit `_error`, NServiceBus `error`, Spring's republisher), and a well-kept DLQ may have
 * a dead-letter exchange of its own (a parking lot for what overflows). So the rule looks at use, not shape:
 * - `other-consumers`: anyone but a Lazarus drainer (consumer tag `lazarus-drain.…`) consumes it, or more consumers
 *   than the listed ones. Only Lazarus consumes a terminal DLQ; anyone else is a worker (or a competing drain).
 *   A dead-letter exchange pointing elsewhere is named in the evidence: consumed and dead-lettering onward is the
 *   shape of a work queue.
 * - `consumed`: for a queue Lazarus has not drained, messages were taken off it before (acks, or deliveries and gets
 *   without ack, since the node started): the queue of a worker that is down or restarting right now.
 * - `moves-on`: a dead-letter exchange together with a message TTL (argument or policy): messages leave by themselves,
 *   a retry or delay queue that feeds the work queue again, not a terminal one.
 * - `queue-missing`: nothing to look at, and the drainer would start on whatever is declared under that name later.
 * The admin's `confirmNotWorkQueue` overrides all of them; LAZARUS_SOURCES (operator configuration) is not checked.
 */
export async function workQueueEvidence({ vhost, queue, drainedBefore }: CheckSourceQueueOptions): Promise<WorkQueueEvidence[]> {
  let raw: unknown
  try {
    raw = await getJson(`/api/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(queue)}`)
  } catch (error) {
    if (isManagementNotFound(error)) {
      return [{ kind: 'queue-missing', message: `queue "${queue}" does not exist on vhost "${vhost}"` }]
    }
    throw new AppError(
      'unavailable',
      `Cannot check that queue "${queue}" is not a work queue: the management API is unavailable (${(error as Error).message}). Try again, or repeat the request with "confirmNotWorkQueue": true if you are sure it is a dead-letter queue.`,
      { vhost, queue, confirmWith: 'confirmNotWorkQueue' },
    )
  }
  const q = queueDetailsSchema.parse(raw)
  const args = q.arguments ?? {}
  const policy = q.effective_policy_definition ?? {}
  const setting = (key: string): unknown => args[`x-${key}`] ?? policy[key]
  const dlx = setting('dead-letter-exchange')
  const ttl = setting('message-ttl')
  const evidence: WorkQueueEvidence[] = []

  const tags = (q.consumer_details ?? []).map((c) => c.consumer_tag)
  const ours = tags.filter((t) => t.startsWith(DRAIN_CONSUMER_TAG_PREFIX)).length
  const foreignTags = tags.filter((t) => !t.startsWith(DRAIN_CONSUMER_TAG_PREFIX))
  // The details come from the statistics database and can be hidden or lag; the count is the broker's own. For a source
  // Lazarus drained before (being re-enabled), a count above the details is most likely its own consumer of a moment
  // ago, not yet gone from the statistics: only consumers the details name count then.
  const others = drainedBefore ? foreignTags.length : Math.max(foreignTags.length, (q.consumers ?? 0) - ours)
  if (others > 0) {
    const onward = typeof dlx === 'string' ? ` and dead-letters to ${dlx === '' ? 'the default exchange' : `exchange "${dlx}"`}` : ''
    evidence.push({
      kind: 'other-consumers',
      message: `${others} consumer${others === 1 ? '' : 's'} other than Lazarus read${others === 1 ? 's' : ''} it${onward}`,
      consumers: others,
      consumerTags: foreignTags.slice(0, 20),
      ...(typeof dlx === 'string' && { deadLetterExchange: dlx }),
    })
  }
  if (!drainedBefore) {
    const stats = q.message_stats ?? {}
    const removed = (stats.ack ?? 0) + (stats.deliver_no_ack ?? 0) + (stats.get_no_ack ?? 0)
    if (removed > 0) evidence.push({ kind: 'consumed', message: `${removed} message${removed === 1 ? ' was' : 's were'} consumed from it before`, consumed: removed })
  }
  if (dlx !== undefined && ttl !== undefined) {
    evidence.push({
      kind: 'moves-on',
      message: `its messages expire after ${String(ttl)} ms into ${dlx === '' ? 'the default exchange' : `exchange "${String(dlx)}"`}: a retry or delay queue`,
      deadLetterExchange: dlx,
      messageTtl: ttl,
    })
  }
  return evidence
}

/**
 * Refuses (409, or 422 for a missing queue, the evidence in `details`) to drain a queue that looks like a work queue,
 * unless the request carries the admin's explicit `confirmNotWorkQueue`. See `workQueueEvidence` for the rule.
 */
export async function assertDrainableQueue(options: CheckSourceQueueOptions & { confirmed: boolean }): Promise<void> {
  // Confirmed: the admin's decision stands even while the management API is down.
  if (options.confirmed) return
  const evidence = await workQueueEvidence(options)
  if (evidence.length === 0) return
  const { vhost, queue } = options
  const details = { vhost, queue, evidence, confirmWith: 'confirmNotWorkQueue' }
  if (evidence.some((e) => e.kind === 'queue-missing')) {
    throw new AppError(
      'unprocessable',
      `Queue "${queue}" does not exist on vhost "${vhost}", so Lazarus cannot check that it is not a work queue, and would drain whatever is declared under that name later. Declare the dead-letter queue first, or repeat the request with "confirmNotWorkQueue": true.`,
      details,
    )
  }
  throw new AppError(
    'conflict',
    `Queue "${queue}" looks like a live work queue, not a terminal dead-letter queue: ${evidence.map((e) => e.message).join('; ')}. Draining it would take the messages from its consumers. If it is a dead-letter queue, repeat the request with "confirmNotWorkQueue": true.`,
    details,
  )
}
