// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel, ConsumeMessage } from 'amqplib'
import { doubled } from './backoff'

export type ControlEventsOptions = {
  connection: { createChannel(): Promise<Channel> }
  /** Lazarus' control exchange (LAZARUS_CONTROL_EXCHANGE). */
  exchange: string
  retryDelayMs: number
  report: (error: unknown) => void
  /** An event arrived: the pause list should be read again soon. */
  onEvent: () => void
  /** Subscribed (again): events published meanwhile are lost, so the list should be read again now. */
  onSubscribed: () => void
  isClosed: () => boolean
}

export type ControlEvents = {
  /** Closes the events channel (for good once the guard is closed). */
  close(): Promise<void>
}

/**
 * Listens on Lazarus' control exchange (docs/ARCHITECTURE.md#pause-hold-release) through an exclusive, server-named
 * queue on its own channel, and subscribes again, with backoff, whenever that channel closes. An event's content is
 * never read, let alone applied: whoever may publish to the exchange could have forged it. Malformed or forged, an
 * event costs one read of the pause list, which is what decides.
 */
export function subscribeToControlEvents(options: ControlEventsOptions): ControlEvents {
  const { connection, exchange, report, isClosed } = options
  let current: Channel | null = null
  let retryDelay = options.retryDelayMs

  function subscribeLater() {
    const delay = retryDelay
    retryDelay = doubled(retryDelay)
    setTimeout(() => void subscribe(), delay).unref?.()
  }

  function onMessage(message: ConsumeMessage | null) {
    if (message === null) {
      // Our queue was deleted under us: closing the channel subscribes again (its close listener). A close that fails
      // means the channel is closing already, with the same effect.
      current?.close().catch(() => {})
      return
    }
    options.onEvent()
  }

  async function subscribe(): Promise<void> {
    if (isClosed()) return
    let channel: Channel | null = null
    try {
      channel = await connection.createChannel()
      const ch = channel
      ch.on('error', (error: Error) => report(new Error(`control channel: ${error.message}`)))
      ch.on('close', () => {
        if (current === ch) current = null
        if (!isClosed()) subscribeLater()
      })
      // Checked, not declared: Lazarus declares it at start-up, so the application's RabbitMQ user needs no configure
      // permission on it (with one, it could delete the exchange). Until it exists this fails and is retried.
      await ch.checkExchange(exchange)
      // An event only means "read the list again": a short queue is enough, and a flood cannot pile up in the broker.
      const { queue: eventsQueue } = await ch.assertQueue('', {
        exclusive: true, autoDelete: true, durable: false, arguments: { 'x-max-length': 10, 'x-overflow': 'drop-head' },
      })
      await ch.bindQueue(eventsQueue, exchange, '#')
      await ch.consume(eventsQueue, onMessage, { noAck: true })
      current = ch
      retryDelay = options.retryDelayMs
      // Closed while subscribing: nothing more to listen for, and a failed close leaves nothing open to retry.
      if (isClosed()) await ch.close().catch(() => {})
      // Events published while we were not subscribed are lost: read the list again.
      else options.onSubscribed()
    } catch (error) {
      report(new Error(`cannot subscribe to ${exchange}: ${(error as Error).message}`))
      // A channel that failed mid-setup retries from its close listener; one that never opened retries here. Closing a
      // failed channel only fails when it is closed already.
      if (!channel && !isClosed()) subscribeLater()
      else if (channel) await channel.close().catch(() => {})
    }
  }

  void subscribe()

  return {
    async close() {
      // A channel that cannot be closed is closing or closed already.
      await current?.close().catch(() => {})
    },
  }
}
