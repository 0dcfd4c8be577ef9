import { randomUUID } from 'node:crypto'
import { AckPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream'
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { ensureCapturePlan } from '@/lib/server/engines/jetstream-capture/capture-plan'
import { natsConnectionOptions, type NatsSettings } from '@/lib/server/platform/broker/nats'
import type { Config } from '@/lib/server/platform/config'
import { natsServerNames } from '@/lib/server/sources/check-jetstream-source'

/**
 * The JetStream part of `npm run demo:seed`: a small order stream whose fulfilment consumer gives up on some messages
 * after max_deliver 3 and terminates the ones it cannot parse, so that Lazarus' capture (docs/jetstream.md#capture)
 * shows JetStream groups beside the RabbitMQ ones. Before the first failure the seed makes the advisory stream and the
 * capture consumer with the capture's own planning and Lazarus' own settings (LAZARUS_NATS_*): advisories are fire and
 * forget, and these wait there for a Lazarus started after the seed.
 */

/** What the seed needs of Lazarus' NATS settings: the connection, and where the capture keeps and reads advisories. */
export type JetStreamSeedSettings = NatsSettings & Pick<Config, 'LAZARUS_NATS_ADVISORY_STREAM' | 'LAZARUS_NATS_CONSUMER' | 'LAZARUS_NATS_ACK_WAIT_S'> & {
  LAZARUS_NATS_URL: string[]
}

export type JetStreamSeedOptions = {
  settings: JetStreamSeedSettings
  /** The demo's prefix: the stream is `<PREFIX>_ORDERS` on `<prefix>.orders.>`. */
  prefix: string
  /** Messages to publish; two in three fail. At least one of each fate. */
  count: number
  /** How long the failing consumer may take, in milliseconds. */
  timeoutMs: number
  log: (line: string) => void
}

export type JetStreamSeedResult = {
  /** The NATS server(s), as host:port: no credentials. */
  server: string
  /** Why nothing was seeded on NATS (unreachable, no JetStream, the advisories cannot be kept); null when it was. */
  skipped: string | null
  stream: string
  subjects: string
  consumer: string
  maxDeliver: number
  published: number
  /** By fate label: how many messages ended so (acked, given up after max_deliver, terminated). */
  breakdown: Record<string, number>
  /** Failures this run made: max-delivered and terminated. */
  failed: number
  /** The stream that keeps their advisories until Lazarus' consumer reads them. */
  advisoryStream: string | null
  /** Messages of an interrupted earlier run, delivered again with no plan: acknowledged and dropped. */
  discardedLeftovers: number
}

const MAX_DELIVER = 3
const CONSUMER = 'fulfilment'

type Verdict = 'ack' | 'nak' | 'term'

type Facts = { order: string; sku: number; warehouse: number; carrier: string; postcode: string; country: string }

type Fate = {
  label: string
  verdict: Verdict
  /** After `<prefix>.orders.` */
  subject: string
  body(facts: Facts): string
  /**
   * What the failing service records about the failure. A JetStream consumer cannot add headers to a message it naks
   * or terminates, so a service that reports why stamps the message it publishes; the demo's publisher stands in for it.
   */
  headers(facts: Facts): [string, string][]
}

const orderCreated = (f: Facts) => JSON.stringify({ orderId: f.order, lines: [{ sku: String(f.sku), quantity: 1 + (f.sku % 3), warehouse: `WH-${f.warehouse}` }], currency: 'EUR' })
const shipmentRequested = (f: Facts) => JSON.stringify({ orderId: f.order, carrier: f.carrier, parcels: 1 + (f.sku % 2) })
const addressCheck = (f: Facts) => JSON.stringify({ orderId: f.order, address: { street: 'Keizersgracht 123', postcode: f.postcode, country: f.country } })

const FATES = {
  ok: { label: 'succeeded', verdict: 'ack', subject: 'created', body: orderCreated, headers: () => [] },
  outOfStock: {
    label: 'Go inventory-service (Nats-Error-Type)', verdict: 'nak', subject: 'created', body: orderCreated,
    headers: (f) => [['Nats-Error-Type', 'inventory.OutOfStockError'], ['Nats-Error-Message', `sku ${f.sku} out of stock in warehouse WH-${f.warehouse}`], ['Nats-Service', 'inventory-service'], ['Nats-Service-Version', '2.3.1']],
  },
  carrierTimeout: {
    label: 'Java fulfilment-service (Nats-Error-Type)', verdict: 'nak', subject: 'shipment.requested', body: shipmentRequested,
    headers: (f) => [
      ['Nats-Error-Type', 'com.acme.fulfilment.CarrierTimeoutException'], ['Nats-Error-Message', `carrier ${f.carrier} did not confirm the pickup of ${f.order} within 30000 ms`],
      ['Nats-Service', 'fulfilment-service'], ['Nats-Service-Version', '1.8.0'],
    ],
  },
  invalidAddress: {
    label: 'NATS micro address-validator (Nats-Service-Error)', verdict: 'nak', subject: 'address.check', body: addressCheck,
    headers: (f) => [['Nats-Service-Error', `postcode "${f.postcode}" is not valid for country ${f.country}`], ['Nats-Service-Error-Code', '422'], ['Nats-Service', 'address-validator'], ['Nats-Service-Version', '0.9.2']],
  },
  silent: { label: 'no error metadata', verdict: 'nak', subject: 'created', body: orderCreated, headers: () => [] },
  poison: {
    label: 'terminated: unparsable (+TERM)', verdict: 'term', subject: 'created',
    // Cut short by a producer's buggy batching; the consumer gives up on it at once.
    body: (f) => orderCreated(f).slice(0, 40),
    headers: () => [['Nats-Error-Type', '*json.SyntaxError'], ['Nats-Error-Message', 'unexpected end of JSON input'], ['Nats-Service', 'order-intake'], ['Nats-Service-Version', '3.0.4']],
  },
} satisfies Record<string, Fate>

type FateName = keyof typeof FATES

/** One message in twelve of each fate but the commonest two, in a fixed order so that every fate comes round. */
const ROTATION: readonly FateName[] = ['ok', 'outOfStock', 'ok', 'carrierTimeout', 'outOfStock', 'poison', 'ok', 'invalidAddress', 'outOfStock', 'silent', 'ok', 'outOfStock']

const CARRIERS = ['DHL', 'UPS', 'PostNL']

function factsOf(n: number): Facts {
  return {
    order: `order-${5000 + (n % 97)}`, sku: 10_000 + ((n * 7919) % 90_000), warehouse: 1 + (n % 9), carrier: CARRIERS[n % CARRIERS.length]!,
    postcode: ['1234', 'XX 99', '00000'][n % 3]!, country: ['NL', 'DE', 'BE'][n % 3]!,
  }
}

/** The demo stream, made when missing; false when a stream of that name exists for other subjects. */
async function ensureDemoStream(jsm: JetStreamManager, name: string, subjects: string): Promise<boolean> {
  try {
    const info = await jsm.streams.info(name)
    return info.config.subjects?.includes(subjects) ?? false
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error
  }
  // A week of demo orders is plenty; the failed ones stay readable as long as they stay in the stream.
  await jsm.streams.add({ name, subjects: [subjects], retention: RetentionPolicy.Limits, storage: StorageType.File, max_age: 7 * 24 * 3600 * 1e9 })
  return true
}

async function ensureFailingConsumer(jsm: JetStreamManager, stream: string): Promise<void> {
  try {
    await jsm.consumers.info(stream, CONSUMER)
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound)) throw error
    await jsm.consumers.add(stream, { durable_name: CONSUMER, description: 'Lazarus demo: fails some orders on purpose', ack_policy: AckPolicy.Explicit, max_deliver: MAX_DELIVER, ack_wait: 30e9 })
  }
}

/**
 * The fulfilment consumer: acknowledges, naks or terminates each message as planned, until every planned message has
 * ended (acked, terminated, or naked for the last time). Returns the leftovers it dropped.
 */
async function failAsPlanned(nc: NatsConnection, stream: string, plans: Map<string, FateName>, timeoutMs: number): Promise<number> {
  const consumer = await jetstream(nc).consumers.get(stream, CONSUMER)
  const deadline = Date.now() + timeoutMs
  let discarded = 0
  while (plans.size > 0) {
    if (Date.now() > deadline) throw new Error(`the demo's JetStream consumer ${CONSUMER} still had ${plans.size} messages to go after ${Math.round(timeoutMs / 1000)} s`)
    for await (const msg of await consumer.fetch({ max_messages: 200, expires: 1_000 })) {
      const id = msg.headers?.get('Nats-Msg-Id') ?? ''
      const fate = plans.get(id)
      if (!fate) {
        discarded++
        msg.ack()
      } else if (FATES[fate].verdict === 'nak') {
        msg.nak()
        if (msg.info.deliveryCount >= MAX_DELIVER) plans.delete(id)
      } else {
        if (FATES[fate].verdict === 'ack') msg.ack()
        else msg.term()
        plans.delete(id)
      }
    }
    await nc.flush()
  }
  return discarded
}

/** Publishes the demo's orders and fails them as planned; says why it did nothing when NATS cannot take part. */
export async function seedJetStream(options: JetStreamSeedOptions): Promise<JetStreamSeedResult> {
  const { settings, prefix, log } = options
  const stream = `${prefix.toUpperCase()}_ORDERS`
  const root = `${prefix}.orders`
  const server = natsServerNames(settings.LAZARUS_NATS_URL)
  const result: JetStreamSeedResult = {
    server, skipped: null, stream, subjects: `${root}.>`, consumer: CONSUMER, maxDeliver: MAX_DELIVER, published: 0, breakdown: {}, failed: 0, advisoryStream: null, discardedLeftovers: 0,
  }
  let nc: NatsConnection
  try {
    nc = await connect({ ...natsConnectionOptions(settings, 'lazarus demo:seed'), timeout: 5_000 })
  } catch (error) {
    return { ...result, skipped: `NATS is not reachable at ${server} (${(error as Error).message})` }
  }
  try {
    let jsm: JetStreamManager
    try {
      jsm = await jetstreamManager(nc)
    } catch (error) {
      return { ...result, skipped: `NATS at ${server} has no JetStream (${(error as Error).message})` }
    }
    if (!(await ensureDemoStream(jsm, stream, result.subjects))) return { ...result, skipped: `a stream named ${stream} exists for other subjects than ${result.subjects}; use another --prefix` }
    const plan = await ensureCapturePlan({
      jsm, ownStream: settings.LAZARUS_NATS_ADVISORY_STREAM, consumer: { name: settings.LAZARUS_NATS_CONSUMER, ackWaitSeconds: settings.LAZARUS_NATS_ACK_WAIT_S }, sourceStreams: [stream],
    })
    const route = plan.bySource.get(stream)
    if (!route || 'problem' in route) return { ...result, skipped: `Lazarus could not capture ${stream}'s failures: ${route && 'problem' in route ? route.problem : 'no capture plan'}` }
    result.advisoryStream = route.advisoryStream
    await ensureFailingConsumer(jsm, stream)

    const js = jetstream(nc)
    const plans = new Map<string, FateName>()
    const total = Math.max(ROTATION.length, options.count)
    for (let n = 0; n < total; n++) {
      const name = ROTATION[n % ROTATION.length]!
      const fate: Fate = FATES[name]
      const facts = factsOf(n)
      const id = randomUUID()
      const h = natsHeaders()
      for (const [key, value] of [['Content-Type', 'application/json'], ['X-Tenant', `tenant-${1 + (n % 4)}`], ['X-Tenant', 'eu-west'], ...fate.headers(facts)]) h.append(key, value)
      plans.set(id, name)
      // The message id (Nats-Msg-Id) is how the consumer finds the plan of a message it receives.
      await js.publish(`${root}.${fate.subject}`, fate.body(facts), { headers: h, msgID: id })
      result.breakdown[fate.label] = (result.breakdown[fate.label] ?? 0) + 1
      if (fate.verdict !== 'ack') result.failed++
    }
    result.published = total
    log(`Published ${total} orders to ${stream} (${result.subjects}); consumer ${CONSUMER} fails some of them (max_deliver ${MAX_DELIVER})...`)
    result.discardedLeftovers = await failAsPlanned(nc, stream, plans, options.timeoutMs)
    return result
  } finally {
    await nc.close()
  }
}
