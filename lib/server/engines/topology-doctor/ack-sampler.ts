import 'server-only'
import type { NatsConnection } from '@nats-io/transport-node'
import { connectNats, type NatsSettings } from '@/lib/server/platform/broker/nats'
import { interruptibleRest } from '@/lib/server/platform/interruptible-rest'
import type { Logger } from '@/lib/server/platform/log'
import { AckTimeWindow, parseAckMetric, type AckTimeWindowOptions, type ObservedAckTimes } from '@/lib/server/topology/jetstream/ack-times'
import { ACK_METRIC } from '@/lib/server/platform/broker/nats-advisory-subjects'

export type AckSampler = {
  /** The ack times seen within the window, per consumer (docs/jetstream.md#the-doctors-jetstream-findings). */
  read(): ObservedAckTimes[]
  /** Resolves once the subscription is in place (tests wait for it before their consumers ack). */
  ready(): Promise<void>
  stop(): Promise<void>
}

export type StartAckSamplerOptions = { settings: NatsSettings; log: Logger; window?: AckTimeWindowOptions }

/**
 * Keeps the ack times JetStream samples for consumers with `sample_freq`: a core NATS subscription on
 * `$JS.EVENT.METRIC.CONSUMER.ACK.>` for as long as the engines run, each event into a bounded window per consumer
 * (ack-times.ts). Nothing stores these events, so what the doctor knows is what this process heard since it started:
 * every process running the engines hears all of them. The client reconnects (and resubscribes) by itself; only a first
 * connection that fails is retried here.
 */
export function startAckSampler({ settings, log, window: windowOptions }: StartAckSamplerOptions): AckSampler {
  const window = new AckTimeWindow(windowOptions)
  const { rest, interrupt } = interruptibleRest()
  let stopped = false
  let nc: NatsConnection | null = null
  let markReady: () => void = () => {}
  const subscribed = new Promise<void>((resolve) => (markReady = resolve))

  const running = (async () => {
    for (let failures = 0; !stopped; failures++) {
      try {
        nc = await connectNats(settings, 'lazarus-ack-sampler')
        break
      } catch (error) {
        log.warn('ack sampler cannot reach NATS; retrying', { error: (error as Error).message, failures })
        await rest(Math.min(30_000, 1_000 * 2 ** Math.min(failures, 5)))
      }
    }
    if (!nc) return
    if (stopped) {
      // Connected after stop() looked: nobody else closes it.
      await nc.close().catch(() => undefined)
      return
    }
    const subscription = nc.subscribe(`${ACK_METRIC}.>`, {
      callback: (error, msg) => {
        if (error) return
        const sample = parseAckMetric(msg.data)
        if (sample) window.add(sample)
      },
    })
    // The server has the subscription once a round trip after it is sent.
    await nc.flush()
    markReady()
    await subscription.closed
  })().catch((error: Error) => log.warn('ack sampler stopped', { error: error.message }))

  return {
    read: () => window.read(),
    ready: () => subscribed,
    async stop() {
      stopped = true
      interrupt()
      await nc?.drain().catch(() => undefined)
      await running
    },
  }
}
