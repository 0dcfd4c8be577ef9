import { randomBytes } from 'node:crypto'
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, type JetStreamManager } from '@nats-io/jetstream'

/** The nats-server with JetStream that .ci/services.sh starts. */
export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222'

export function natsConnection(): Promise<NatsConnection> {
  return connect({ servers: NATS_URL, name: 'lazarus-tests' })
}

/** A name no other test or run uses: stream and consumer names allow letters, digits, _ and -. */
export function uniqueNatsName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`
}

export type TestStream = { name: string; subject: string; drop(): Promise<void> }

/** A stream of the test's own on `<name>.>` (lower case), removed by drop(). */
export async function createTestStream(jsm: JetStreamManager, options: { prefix: string; retention?: RetentionPolicy }): Promise<TestStream> {
  const name = uniqueNatsName(options.prefix)
  const subject = name.toLowerCase()
  await jsm.streams.add({ name, subjects: [`${subject}.>`], retention: options.retention ?? RetentionPolicy.Limits })
  return { name, subject, drop: async () => void (await jsm.streams.delete(name).catch(() => false)) }
}

export type FailingMessage = { subject: string; data: Uint8Array; headers?: [string, string][] }

/**
 * An application consumer that fails some messages: publishes `messages`, then reads them with a durable pull
 * consumer of `maxDeliver` deliveries, acking those `fails` says succeed and naking (or terminating) the others
 * until none is pending. What the server then does with the failures (advisories) is what Lazarus captures.
 */
export async function runFailingConsumer(nc: NatsConnection, options: {
  stream: string; consumer: string; maxDeliver: number; messages: FailingMessage[]
  fails: (data: string) => 'ack' | 'nak' | 'term'
}): Promise<{ failed: number }> {
  const jsm = await jetstreamManager(nc)
  const js = jetstream(nc)
  await jsm.consumers.add(options.stream, { durable_name: options.consumer, ack_policy: AckPolicy.Explicit, max_deliver: options.maxDeliver, ack_wait: 30e9 })
  for (const m of options.messages) {
    const h = natsHeaders()
    for (const [k, v] of m.headers ?? []) h.append(k, v)
    await js.publish(m.subject, m.data, { headers: h })
  }
  const consumer = await js.consumers.get(options.stream, options.consumer)
  let failed = 0
  for (;;) {
    const info = await jsm.consumers.info(options.stream, options.consumer)
    if (info.num_pending === 0 && info.num_ack_pending === 0) break
    const batch = await consumer.fetch({ max_messages: 500, expires: 1_000 })
    for await (const msg of batch) {
      const verdict = options.fails(new TextDecoder().decode(msg.data))
      if (verdict === 'ack') msg.ack()
      else if (verdict === 'term') {
        msg.term()
        failed++
      } else {
        msg.nak()
        if (msg.info.deliveryCount >= options.maxDeliver) failed++
      }
    }
    await nc.flush()
  }
  return { failed }
}
