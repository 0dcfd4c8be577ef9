import type { Channel } from 'amqplib'
import { sourceQueue } from './slots'

/**
 * Dead-lettering by the real broker for the browser tests: a work queue whose dead letters go to the drained DLQ, and a
 * consumer that rejects what reaches it, so RabbitMQ itself writes x-death and the drainer stores the letters.
 */
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'

/** The DLQ this worker's e2e server drains (support/slots.ts). */
export const DLQ = sourceQueue()

/** Declares the DLQ and `work`, whose rejected messages RabbitMQ routes to it; binds `work` to `exchange` when given. */
export async function declareWorkQueue(channel: Channel, { work, exchange, key }: { work: string; exchange?: string; key?: string }): Promise<void> {
  await channel.assertQueue(DLQ, { durable: true })
  if (exchange) await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false })
  await channel.assertQueue(work, { durable: false, autoDelete: false, arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': DLQ } })
  if (exchange) await channel.bindQueue(work, exchange, key ?? '')
}

/**
 * Consumes `count` messages from `work` and rejects each without requeue, so RabbitMQ dead-letters them. Then a round
 * trip on the same channel: RabbitMQ drops the commands a channel has not yet handled when its connection closes, so
 * nacks sent just before the close would be lost and the letters requeued into `work` instead. The channel handles its
 * frames in order: once it answers, every nack was taken. Returns the messages left in `work` (0 unless more came).
 */
export async function rejectEach(channel: Channel, work: string, count: number, timeoutMs = 15_000): Promise<number> {
  let rejected = 0
  let consumerTag = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${rejected} of ${count} letters reached ${work}`)), timeoutMs)
    void channel
      .consume(work, (msg) => {
        if (!msg || rejected >= count) return
        channel.nack(msg, false, false)
        if (++rejected === count) {
          clearTimeout(timer)
          resolve()
        }
      })
      .then((ok) => (consumerTag = ok.consumerTag), reject)
  })
  if (consumerTag) await channel.cancel(consumerTag)
  return (await channel.checkQueue(work)).messageCount
}
