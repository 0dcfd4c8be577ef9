// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib'
import { HELD_ENTITY_HEADER, HELD_FROM_HEADER, HELD_ID_HEADER } from './protocol'

/** One message to hold: the delivery, the pause it falls under, and the id its held copy carries. */
export type HeldCopy = { message: ConsumeMessage; entityKey: string | null; heldId: string }

export type HoldPublisherOptions = {
  connection: { createConfirmChannel(): Promise<ConfirmChannel> }
  /** The queue the guard protects: where a release sends the message back. */
  queue: string
  /** Lazarus' hold exchange (LAZARUS_HOLD_QUEUE). */
  exchange: string
  confirmTimeoutMs: number
  report: (error: unknown) => void
}

export type HoldPublisher = {
  /**
   * Publishes one held copy and waits for the broker: true only for an ack without a return, the one answer after
   * which the original may be acked. Throws only when no channel can be opened.
   */
  publish(copy: HeldCopy): Promise<boolean>
  /** Closes the hold channel. */
  close(): Promise<void>
}

/**
 * Publishes held copies to lazarus.hold (docs/ARCHITECTURE.md#pause-hold-release): the message unchanged, plus
 * `x-lazarus-held-from`, `-entity` and `-id`, on a confirm channel with `mandatory`, opened when first needed and again
 * after it closed.
 */
export function holdPublisher(options: HoldPublisherOptions): HoldPublisher {
  const { connection, queue, exchange, confirmTimeoutMs, report } = options
  let channel: ConfirmChannel | null = null
  let opening: Promise<ConfirmChannel> | null = null
  /** Held ids the broker returned (basic.return comes before the ack of the same message). */
  const returned = new Set<string>()

  function openChannel(): Promise<ConfirmChannel> {
    if (channel) return Promise.resolve(channel)
    opening ??= (async () => {
      try {
        const opened = await connection.createConfirmChannel()
        opened.on('error', (error: Error) => report(new Error(`hold channel: ${error.message}`)))
        opened.on('close', () => {
          if (channel === opened) channel = null
        })
        // Unroutable (no lazarus.hold queue bound): the hold failed and the original must not be acked.
        opened.on('return', (message: ConsumeMessage) => {
          const id = message.properties.headers?.[HELD_ID_HEADER]
          if (typeof id === 'string') returned.add(id)
        })
        channel = opened
        return opened
      } finally {
        opening = null
      }
    })()
    return opening
  }

  /** The original's properties and headers, plus the guard's own; what the broker checks is left out. */
  function publishOptions(copy: HeldCopy): Options.Publish {
    // Broker-checked fields cannot be copied: a user id that is not the guard's own would close the channel,
    // and an expiration could let the copy expire in lazarus.hold. A release publishes neither anyway.
    const { headers, expiration: _expiration, userId: _userId, ...properties } = copy.message.properties
    const publish: Options.Publish = { mandatory: true }
    for (const [key, value] of Object.entries(properties)) if (value !== undefined && value !== null && key !== 'clusterId') (publish as Record<string, unknown>)[key] = value
    publish.headers = {
      ...(headers ?? {}),
      [HELD_FROM_HEADER]: queue,
      [HELD_ID_HEADER]: copy.heldId,
      ...(copy.entityKey === null ? {} : { [HELD_ENTITY_HEADER]: copy.entityKey }),
    }
    return publish
  }

  /** The broker's answer to one publish: its ack (true), nack, a closed channel or no answer in time (false). */
  function confirm(confirmChannel: ConfirmChannel, copy: HeldCopy, publish: Options.Publish): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let settled = false
      const finish = (ok: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        confirmChannel.off('close', onClose)
        resolve(ok)
      }
      const onClose = () => finish(false)
      const timer = setTimeout(() => {
        report(new Error(`no confirm for a held message after ${confirmTimeoutMs} ms; trying again`))
        finish(false)
      }, confirmTimeoutMs)
      confirmChannel.once('close', onClose)
      try {
        confirmChannel.publish(exchange, '', copy.message.content, publish, (error) => finish(!error))
      } catch (error) {
        report(new Error(`cannot publish a held message: ${(error as Error).message}`))
        finish(false)
      }
    })
  }

  return {
    async publish(copy) {
      const confirmChannel = await openChannel()
      const confirmed = await confirm(confirmChannel, copy, publishOptions(copy))
      // The broker sends basic.return before the ack of the same message.
      const wasReturned = returned.delete(copy.heldId)
      if (wasReturned) report(new Error(`${exchange} routed a held message nowhere (is the ${exchange} queue bound?); trying again`))
      return confirmed && !wasReturned
    },
    async close() {
      // A channel that cannot be closed is closing or closed already.
      await channel?.close().catch(() => {})
    },
  }
}
