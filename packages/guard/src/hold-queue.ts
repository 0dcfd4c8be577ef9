// Types only: the guard uses the application's own amqplib through the connection it is given.
import type { Channel } from 'amqplib'
import { doubled, sleep } from './backoff'
import type { ClosedChannels } from './closed-channels'
import type { HeldCopy, HoldPublisher } from './hold-publisher'

/** A delivery to hold, with the channel it arrived on (where the original is acked) and the pause it falls under. */
export type HoldJob = HeldCopy & { channel: Channel; pauseId: string }

export type HoldEvent = { queue: string; pauseId: string; entityKey: string | null; heldId: string }

export type HoldQueueOptions = {
  publisher: HoldPublisher
  queue: string
  retryDelayMs: number
  closedChannels: ClosedChannels
  report: (error: unknown) => void
  onHold?: (event: HoldEvent) => void
  isClosed: () => boolean
}

export type HoldQueue = {
  /** Queues a delivery to hold; it is held after every delivery queued before it. */
  add(job: HoldJob): void
  /** Waits for the holds in progress, at most `timeoutMs`. */
  settle(timeoutMs: number): Promise<void>
}

/**
 * Holds deliveries one at a time, in delivery order, so a retry never lets a later message of the same entity overtake
 * an earlier one in lazarus.hold. The original is acked only after the broker confirmed its held copy
 * (docs/ARCHITECTURE.md#where-crash-safety-comes-from, "guard hold"); a failed hold is retried with backoff.
 */
export function holdQueue(options: HoldQueueOptions): HoldQueue {
  const { publisher, queue, retryDelayMs, closedChannels, report, isClosed } = options
  const holds: HoldJob[] = []
  let pumping: Promise<void> | null = null

  /** Acks the original of a confirmed hold. */
  function ackOriginal(job: HoldJob) {
    try {
      job.channel.ack(job.message)
      options.onHold?.({ queue, pauseId: job.pauseId, entityKey: job.entityKey, heldId: job.heldId })
    } catch (error) {
      // Channel closed between hold and ack: the original is redelivered and held again (a duplicate hold).
      report(new Error(`held a message but could not ack the original: ${(error as Error).message}`))
    }
  }

  function pump(): Promise<void> {
    pumping ??= (async () => {
      let delay = retryDelayMs
      while (holds.length > 0) {
        const job = holds[0]
        if (closedChannels.has(job.channel)) {
          // The delivery went back to the queue with its channel; it will be held again when redelivered.
          holds.shift()
          continue
        }
        let ok = false
        try {
          ok = await publisher.publish(job)
        } catch (error) {
          report(new Error(`cannot open a channel to hold messages: ${(error as Error).message}`))
        }
        if (ok) {
          holds.shift()
          delay = retryDelayMs
          ackOriginal(job)
        } else {
          // A closing guard gives up after a few tries: the unacked originals go back to the queue with their channels.
          if (isClosed() && holds.length > 0 && delay > retryDelayMs * 4) break
          await sleep(delay)
          delay = doubled(delay)
        }
      }
    })().finally(() => {
      pumping = null
      if (holds.length > 0 && !isClosed()) void pump()
    })
    return pumping
  }

  return {
    add(job) {
      holds.push(job)
      void pump()
    },
    async settle(timeoutMs) {
      if (!pumping) return
      // The timer is cleared once the holds are done: left running, it would keep the application's process alive
      // for up to timeoutMs after guard.close().
      let timer: NodeJS.Timeout | undefined
      await Promise.race([pumping, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
      clearTimeout(timer)
    },
  }
}
