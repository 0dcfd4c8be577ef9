import 'server-only'
import { z } from 'zod'

/*
 * How long consumers' handlers take, from JetStream's ack sampling (docs/jetstream.md#the-doctors-jetstream-findings).
 * A consumer whose `sample_freq` is set makes the server publish, for that share of its acks, a metric event on
 * `$JS.EVENT.METRIC.CONSUMER.ACK.<stream>.<consumer>` whose `ack_time` is the nanoseconds from the message's latest
 * delivery to its ack, and `deliveries`, which delivery was acked. The server restarts that clock when the ack wait runs
 * out (checked on nats-server 2.9.10), so an ack later than ack_wait is measured short: what shows a handler too slow
 * for its ack wait is ack times close to it, and acks of redeliveries. Core NATS: nobody keeps these events, so the
 * doctor's engine subscribes while it runs and keeps the newest of them per consumer in this window; a run reads what
 * the window holds.
 */

/** One sampled ack: how long it took (ms) and which delivery of the message it acked (1: the first). */
export type AckSample = { ms: number; deliveries: number }

/** What the doctor reads: per consumer, the acks seen within the window, and since when it has been looking. */
export type ObservedAckTimes = { stream: string; consumer: string; samples: AckSample[]; since: string }

const metricSchema = z.object({
  type: z.literal('io.nats.jetstream.metric.v1.consumer_ack'),
  stream: z.string().min(1).max(255),
  consumer: z.string().min(1).max(255),
  ack_time: z.number().nonnegative(),
  deliveries: z.number().int().positive().catch(1),
})

export type AckTimeSample = AckSample & { stream: string; consumer: string }

/** One metric event as a sample; null for anything else on the subject. */
export function parseAckMetric(data: Uint8Array): AckTimeSample | null {
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder().decode(data))
  } catch {
    return null
  }
  const parsed = metricSchema.safeParse(json)
  if (!parsed.success) return null
  const { stream, consumer, ack_time: ns, deliveries } = parsed.data
  return { stream, consumer, ms: ns / 1e6, deliveries }
}

export type AckTimeWindowOptions = {
  /** Samples older than this are forgotten (default 15 minutes): the doctor judges how handlers run now. */
  windowMs?: number
  /** The newest samples kept per consumer (default 500). */
  perConsumer?: number
  /** Consumers tracked at most (default 5,000); the one heard from least recently makes room. */
  consumers?: number
}

/** The newest ack times per consumer, bounded in count and age, so a busy account costs a fixed amount of memory. */
export class AckTimeWindow {
  private readonly windowMs: number
  private readonly perConsumer: number
  private readonly maxConsumers: number
  private readonly byConsumer = new Map<string, { stream: string; consumer: string; samples: (AckSample & { at: number })[] }>()
  private readonly startedAt: number

  constructor(options: AckTimeWindowOptions & { now?: number } = {}) {
    this.windowMs = options.windowMs ?? 15 * 60_000
    this.perConsumer = options.perConsumer ?? 500
    this.maxConsumers = options.consumers ?? 5_000
    this.startedAt = options.now ?? Date.now()
  }

  add(sample: AckTimeSample, now = Date.now()): void {
    const key = `${sample.stream}\u0000${sample.consumer}`
    let entry = this.byConsumer.get(key)
    if (entry) this.byConsumer.delete(key)
    else {
      if (this.byConsumer.size >= this.maxConsumers) this.byConsumer.delete(this.byConsumer.keys().next().value!)
      entry = { stream: sample.stream, consumer: sample.consumer, samples: [] }
    }
    entry.samples.push({ at: now, ms: sample.ms, deliveries: sample.deliveries })
    if (entry.samples.length > this.perConsumer) entry.samples.splice(0, entry.samples.length - this.perConsumer)
    // Insertion order is recency: the first key is the consumer heard from least recently.
    this.byConsumer.set(key, entry)
  }

  read(now = Date.now()): ObservedAckTimes[] {
    const from = now - this.windowMs
    const since = new Date(Math.max(from, this.startedAt)).toISOString()
    const out: ObservedAckTimes[] = []
    for (const entry of this.byConsumer.values()) {
      const samples = entry.samples.filter((s) => s.at >= from).map(({ ms, deliveries }) => ({ ms, deliveries }))
      if (samples.length > 0) out.push({ stream: entry.stream, consumer: entry.consumer, samples, since })
    }
    return out
  }
}

/** The 95th percentile (nearest rank) of some values; 0 for none. */
export function p95(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(0.95 * sorted.length) - 1)] ?? 0
}

/**
 * How long the server waited for the ack of a message's `deliveries`-th delivery: ack_wait, or with a backoff its
 * step for that delivery (the last step for any after), which replaces ack_wait as the deadline.
 */
export function ackDeadlineMs(consumer: { ackWaitMs: number; backoffMs: readonly number[] }, deliveries: number): number {
  if (consumer.backoffMs.length === 0) return consumer.ackWaitMs
  return consumer.backoffMs[Math.min(Math.max(deliveries, 1), consumer.backoffMs.length) - 1]
}

/** A consumer's sampled acks in brief: their 95th percentile and maximum, as times and as shares of their deadline. */
export function summariseAcks(consumer: { ackWaitMs: number; backoffMs: readonly number[] }, samples: readonly AckSample[]) {
  const shares = samples.map((s) => s.ms / ackDeadlineMs(consumer, s.deliveries))
  return {
    samples: samples.length,
    p95Ms: p95(samples.map((s) => s.ms)),
    maxMs: Math.max(0, ...samples.map((s) => s.ms)),
    p95Share: p95(shares),
    maxShare: Math.max(0, ...shares),
    onRedelivery: samples.filter((s) => s.deliveries > 1).length,
  }
}
