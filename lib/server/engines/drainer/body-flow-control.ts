import 'server-only'
import type { Channel } from '@/lib/server/platform/broker/amqplib'

/** Past this many bytes of bodies held in memory, consumption pauses until the writer is back under the low mark. */
const PENDING_BYTES_HIGH = 192 * 1024 * 1024
const PENDING_BYTES_LOW = 64 * 1024 * 1024
/** Prefetch counts messages, not bytes: after a large body the channel asks for few deliveries at a time. */
const LARGE_BODY_BYTES = 1024 * 1024
const LARGE_BODY_PREFETCH = 8
const SMALL_BODIES_BEFORE_RESTORE = 1000

/**
 * Flow control by bytes for one consumer (docs/ARCHITECTURE.md#draining, "Consuming"): after a body of 1 MiB or more
 * the prefetch drops to 8 until 1,000 small bodies have passed, and past 192 MiB held in memory the consumer is
 * cancelled until the writer is back under 64 MiB. Consulted on every delivery: it allocates nothing and never waits.
 */
export class BodyFlowControl {
  private reducedPrefetch = false
  private smallSinceLarge = 0
  private throttled = false

  constructor(private readonly prefetch: number) {}

  /** After each delivery: adapts the prefetch; true when consuming must pause because too many bytes are held. */
  afterDelivery(channel: Channel | null, bodyBytes: number, pendingBytes: number): boolean {
    if (channel) this.adaptPrefetch(channel, bodyBytes)
    if (pendingBytes > PENDING_BYTES_HIGH && !this.throttled) {
      this.throttled = true
      return true
    }
    return false
  }

  /** True, once, when a paused consumer is back under the low mark and may consume again. */
  release(pendingBytes: number): boolean {
    if (!this.throttled || pendingBytes >= PENDING_BYTES_LOW) return false
    this.throttled = false
    return true
  }

  // basic.qos fails only on a channel that is closing, and that close ends the consumer (onEnd): the two ignored
  // failures below have nothing to add.
  private adaptPrefetch(channel: Channel, bodyBytes: number): void {
    if (bodyBytes >= LARGE_BODY_BYTES) {
      this.smallSinceLarge = 0
      if (!this.reducedPrefetch) {
        this.reducedPrefetch = true
        void channel.prefetch(LARGE_BODY_PREFETCH).catch(() => {})
      }
    } else if (this.reducedPrefetch && ++this.smallSinceLarge >= SMALL_BODIES_BEFORE_RESTORE) {
      this.reducedPrefetch = false
      void channel.prefetch(this.prefetch).catch(() => {})
    }
  }
}
