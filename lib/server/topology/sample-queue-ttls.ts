import 'server-only'
import { z } from 'zod'
import { AppError } from '@/lib/server/platform/errors/app-error'
import { getJson, isManagementNotFound, postJson } from '@/lib/server/platform/broker/management-api'

/*
 * The opt-in sample of a live queue's per-message TTLs (docs/topology.md#sampling). RabbitMQ cannot show a message
 * without taking it: the management API's get with `ack_requeue_true` takes the first messages and puts them back.
 * On a classic queue they go back where they were, marked redelivered; on a quorum queue every such get counts
 * towards the delivery limit (docs/rabbitmq.md#the-management-api), and streams cannot be read this way, so both are
 * refused.
 */

const MAX_SAMPLE = 20

const queueAnswer = z.object({ type: z.string().default('classic') })
const messagesAnswer = z.array(z.object({ properties: z.union([z.object({ expiration: z.string().optional() }), z.array(z.unknown())]).optional() }))

export type QueueTtlSample = { queue: string; expirations: (string | null)[] }

/** Reads the `expiration` property of the first `count` messages (at most 20) of a classic queue, requeueing them. */
export async function sampleQueueTtls(options: { vhost: string; queue: string; count: number; timeoutMs?: number }): Promise<QueueTtlSample> {
  const path = `/api/queues/${encodeURIComponent(options.vhost)}/${encodeURIComponent(options.queue)}`
  const timeoutMs = options.timeoutMs ?? 5_000
  let type: string
  try {
    type = queueAnswer.parse(await getJson(`${path}?columns=type`, timeoutMs)).type
  } catch (error) {
    if (isManagementNotFound(error)) throw new AppError('not_found', `queue "${options.queue}" not found`)
    throw error
  }
  if (type !== 'classic') {
    throw new AppError('unprocessable', `queue "${options.queue}" is a ${type} queue: only classic queues can be sampled (a get on a quorum queue counts towards its delivery limit; streams cannot be read this way)`)
  }
  const count = Math.max(1, Math.min(MAX_SAMPLE, Math.floor(options.count)))
  const answer = messagesAnswer.parse(await postJson(`${path}/get`, { count, ackmode: 'ack_requeue_true', encoding: 'auto', truncate: 64 }, timeoutMs))
  return {
    queue: options.queue,
    expirations: answer.map((m) => (m.properties && !Array.isArray(m.properties) ? (m.properties.expiration ?? null) : null)),
  }
}
