import 'server-only'
import type { Channel } from '@/lib/server/platform/broker/amqplib'
import { REPLY, replyCodeOf } from './amqp-errors'

/** Anything that opens channels: a BrokerConnection, or the connection a setup hook is handed. */
export type ChannelSource = { createChannel(): Promise<Channel> }

/**
 * Runs `fn` on a throw-away channel, closed afterwards. A refused declare (a missing queue or exchange, a permission)
 * closes the channel it was sent on, so checks and declarations that may fail never run on a channel anything else
 * uses. The channel's own 'error' event repeats the rejection `fn` already gets, so it is not logged here.
 */
export async function withChannel<T>(source: ChannelSource, fn: (channel: Channel) => Promise<T>): Promise<T> {
  const channel = await source.createChannel()
  let closed = false
  channel.on('error', () => {})
  channel.on('close', () => (closed = true))
  try {
    return await fn(channel)
  } finally {
    // Already closed when fn's failure was the broker closing it; closing again would only throw.
    if (!closed) await channel.close().catch(() => {})
  }
}

/** Whether a queue exists (a passive declare, which needs no permission); other failures are thrown. */
export function queueExists(source: ChannelSource, queue: string): Promise<boolean> {
  return withChannel(source, (channel) => channel.checkQueue(queue)).then(() => true, notFoundAsFalse)
}

/** Whether an exchange exists (a passive declare); other failures are thrown. */
export function exchangeExists(source: ChannelSource, exchange: string): Promise<boolean> {
  if (exchange === '') return Promise.resolve(true)
  return withChannel(source, (channel) => channel.checkExchange(exchange)).then(() => true, notFoundAsFalse)
}

function notFoundAsFalse(error: unknown): false {
  if (replyCodeOf(error) === REPLY.NOT_FOUND) return false
  throw error
}
