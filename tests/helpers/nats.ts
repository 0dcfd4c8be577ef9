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

/** The prefixes of the streams the tests make (this file's callers and the browser tests' servers). */
const TEST_STREAM = /^(LZT_|LZE2E_|E2E_ORDERS_)/
/** Younger streams may belong to a run still going on this machine. */
const LEFTOVER_AFTER_MS = 15 * 60_000

/**
 * Removes the streams a run that was killed left on the NATS server. They matter beyond their space: a stream that keeps
 * every stream's advisories (`….MAX_DELIVERIES.>`) stops any other from keeping some of them, which the team-stream
 * test needs to do. Only the tests' own names, and only those older than a quarter of an hour.
 */
export async function removeLeftoverTestStreams(): Promise<void> {
  let nc: NatsConnection
  try {
    nc = await natsConnection()
  } catch (error) {
    console.warn(`NATS at ${NATS_URL} unreachable (${(error as Error).message}): the JetStream tests will fail; .ci/services.sh starts it`)
    return
  }
  try {
    const jsm = await jetstreamManager(nc)
    for await (const info of jsm.streams.list()) {
      if (TEST_STREAM.test(info.config.name) && Date.now() - new Date(info.created).getTime() > LEFTOVER_AFTER_MS) await jsm.streams.delete(info.config.name).catch(() => false)
    }
  } finally {
    await nc.close()
  }
}
