// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel, ConsumeMessage, Options } from 'amqplib'
import type { ClosedChannels } from './closed-channels'
import type { PauseRegistry } from './registry'

export type GuardedConsumer = {
  /** The current consumer tag; null while the whole queue is paused (or after cancel). */
  readonly consumerTag: string | null
  /** True while a whole-queue pause keeps this consumer cancelled. */
  readonly paused: boolean
  /** Stops consuming for good (does not close the channel). */
  cancel(): Promise<void>
}

/** How the guard drives a consumer it started: after every change of the pauses, and when it closes. */
export type ConsumerControl = { sync(): Promise<void>; stop(): Promise<void> }

export type GuardedConsumerOptions = {
  channel: Channel
  queue: string
  /** The application's handler behind the guard's hold decision (the guard's `wrap`). */
  onMessage: (message: ConsumeMessage | null) => void
  consumeOptions: Options.Consume
  registry: PauseRegistry
  closedChannels: ClosedChannels
  /** The guard's running consumers: this one is in it from its start until it stops. */
  consumers: Set<ConsumerControl>
  report: (error: unknown) => void
}

/**
 * A consumer of the guarded queue that follows whole-queue pauses: cancelled while one is active (cancelling neither
 * requeues nor drops what was delivered), consuming again once it ended. Changes are applied one after another, in
 * the order the pauses changed.
 */
export async function startGuardedConsumer(options: GuardedConsumerOptions): Promise<GuardedConsumer> {
  const { channel, queue, registry, consumers, report } = options
  let tag: string | null = null
  let stopped = false
  let chain: Promise<void> = Promise.resolve()
  const control: ConsumerControl = { sync, stop: () => cancel() }

  function forget() {
    stopped = true
    tag = null
    consumers.delete(control)
  }

  async function start() {
    const { consumerTag } = await channel.consume(
      queue,
      (message) => {
        // Cancelled by the broker (queue deleted): the application decides what to do, as without a guard.
        if (message === null) forget()
        options.onMessage(message)
      },
      options.consumeOptions,
    )
    tag = consumerTag
  }

  async function step() {
    const paused = registry.wholeQueuePause() !== null
    if ((stopped || paused) && tag) {
      const current = tag
      tag = null
      // Cancelling neither requeues nor drops what was delivered; those messages are held by the callback.
      await channel.cancel(current)
    } else if (!stopped && !paused && !tag && !options.closedChannels.has(channel)) {
      await start()
    }
  }

  function sync(): Promise<void> {
    chain = chain.then(step).catch((error) => report(new Error(`cannot ${tag ? 'cancel' : 'resume'} the consumer of ${queue}: ${(error as Error).message}`)))
    return chain
  }

  async function cancel(): Promise<void> {
    stopped = true
    consumers.delete(control)
    await sync()
  }

  channel.once('close', forget)
  // The first consume fails loudly (queue missing, access refused), as channel.consume would.
  if (registry.wholeQueuePause() === null) await start()
  consumers.add(control)
  // A pause may have arrived while the first consume was in flight.
  void sync()

  return {
    get consumerTag() {
      return tag
    },
    get paused() {
      return !stopped && registry.wholeQueuePause() !== null
    },
    cancel,
  }
}
