/**
 * `npm run demo:seed` (lib/demo/seed.ts, run with the react-server condition, as Lazarus' own code is): fills local
 * RabbitMQ with a realistic mix of dead letters so a new Lazarus user sees a populated dashboard. Three demo apps get
 * the three-tier builder's retry topology (topology.ts); a deliberately failing consumer retries through the delay
 * queues until x-death says it is out of attempts, then moves each message to the terminal DLQ the way its framework
 * would (framework-failures.ts). Side queues add broker-made dead letters: TTL expiry, max-length overflow and a
 * consumer that rejects without retrying. Beside the apps, one deliberate, labelled trap per kind of finding the
 * topology doctor can see in declarations (traps.ts).
 * When a NATS server with JetStream answers (LAZARUS_NATS_URL, else nats://127.0.0.1:4222), a small order stream's
 * consumer fails some messages too, for Lazarus' JetStream capture (jetstream.ts); when none does, RabbitMQ alone.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import amqp from 'amqplib'
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib'
import { ConfigError, parseConfig } from '@/lib/server/platform/config'
import {
  applySenderConventions,
  ASYNC_BOUNDARY,
  buildDeadLetterCopy,
  frame,
  type ErrorInfo,
  type FailureKind,
  type FrameworkStyle,
  type Headers,
} from './framework-failures'
import { seedJetStream, type JetStreamSeedResult, type JetStreamSeedSettings } from './jetstream'
import { handleReplayed, isReplayed, type ReplayTally } from './replayed'
import { declareDemoTraps, demoTraps, type DemoTrap } from './traps'
import {
  appTopology,
  CAPPED_QUEUE_MAX_LENGTH,
  declareAppTopology,
  DEMO_DELAYS,
  FAST_DELAYS,
  formatDelay,
  inspectQueue,
  lazarusSources,
  TopologyConflictError,
  type AppTopology,
  type AppTopologySpec,
  type SideQueueKind,
  type SideQueueSpec,
} from './topology'

export type SeedOptions = {
  /** Broker to seed. Default: `AMQP_URL`, else amqp://guest:guest@127.0.0.1:5672. */
  amqpUrl: string
  /** Dead letters to produce, over all DLQs. Capped side queues also keep a backlog of CAPPED_QUEUE_MAX_LENGTH. */
  count: number
  /** First part of every queue and exchange name: `<prefix>.<app>.work`. */
  prefix: string
  /** Millisecond retry delays instead of 5 s / 30 s, for tests. */
  fast: boolean
  /** How long to wait for all dead letters to arrive, in milliseconds. Default: 120 s, or 30 s with `fast`. */
  timeoutMs?: number
  /** Progress lines. Default: silent. */
  log?: (line: string) => void
  /**
   * Lazarus' NATS settings, for the JetStream part (jetstream.ts): it runs when the server answers. Default: none, so
   * RabbitMQ alone; the command line reads them from LAZARUS_NATS_*, with nats://127.0.0.1:4222 when the URL is unset.
   */
  nats?: JetStreamSeedSettings
}

export const DEFAULT_SEED_OPTIONS: SeedOptions = {
  amqpUrl: 'amqp://guest:guest@127.0.0.1:5672',
  count: 600,
  prefix: 'demo',
  fast: false,
}

export type DlqSummary = {
  queue: string
  /** Messages in the DLQ at the end, from this run and earlier ones. */
  depth: number
  /** Consumers on the DLQ at the end: a running Lazarus drainer empties it as the seed fills it. */
  consumers: number
  /** Dead letters this run sent to the DLQ. */
  added: number
  /** `added`, by how the messages got there (framework or broker dead-letter reason). */
  breakdown: Record<string, number>
}

export type SeedResult = {
  prefix: string
  fast: boolean
  durationMs: number
  topologies: AppTopology[]
  /** The deliberate traps declared beside the apps, for the topology doctor to find (traps.ts). */
  traps: DemoTrap[]
  dlqs: DlqSummary[]
  /** Value for LAZARUS_SOURCES: the terminal DLQs, comma-separated. */
  lazarusSources: string
  /** Messages from an interrupted earlier run found in a work queue; their failure plans died with that run. */
  discardedLeftovers: number
  /** Messages Lazarus replayed into a work queue: succeeded this time, or failed again (lib/demo/replayed.ts). */
  replaysSucceeded: number
  replaysFailedAgain: number
  /** The JetStream part, with the LAZARUS_NATS_URL to give Lazarus (credentials masked); null when not asked for. */
  jetstream: (JetStreamSeedResult & { lazarusNatsUrl: string }) | null
}

/** An expected failure with a message fit for the terminal (broker unreachable, timeout, bad usage). */
export class SeedError extends Error {
  override name = 'SeedError'
}

// =================================================================================================================
// The demo world: apps, their routes, the services consuming them, and how those fail

type Facts = Record<string, string>
type BodyDraft = { content: Buffer; contentType: string; contentEncoding?: string; facts: Facts }
type BodyFactory = (entity: string, rng: Rng) => BodyDraft

type ServiceSpec = { name: string; framework: FrameworkStyle; versions: readonly string[] }

type FailureScenario = {
  weight: number
  /**
   * Deliveries before the service gives up. Default: every tier (the first delivery, then one after each delay: 3).
   * The consumer parks a message after the last tier whatever this says, as the builder's consumer rule requires.
   */
  attempts?: number
  /** Versions that fail this way; a subset tells a "started failing in 1.5.0" story. Default: all. */
  versions?: readonly string[]
  kind?: FailureKind
  /** A body that provokes this failure, in place of the route's usual one. */
  body?: BodyFactory
  error: (facts: Facts, rng: Rng) => ErrorInfo
}

type WorkRoute = {
  routingKey: string
  messageType: string
  handler: string
  service: ServiceSpec
  body: BodyFactory
  failures: readonly FailureScenario[]
}

type SideRoute = SideQueueSpec & { weight: number; messageType: string; body: BodyFactory }

type DemoApp = {
  name: string
  /** `app_id` of the service publishing the app's messages. */
  producer: string
  /** Whether the producer also stamps the entity into `x-entity-key` (not every team does). */
  entityKeyHeader: boolean
  entity: (n: number) => string
  routes: readonly WorkRoute[]
  side: readonly SideRoute[]
}

type Rng = {
  int(min: number, max: number): number
  pick<T>(items: readonly T[]): T
  alnum(length: number): string
}

const rng: Rng = {
  int: (min, max) => min + Math.floor(Math.random() * (max - min + 1)),
  pick: (items) => items[Math.floor(Math.random() * items.length)]!,
  alnum: (length) =>
    Array.from({ length }, () => 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'[Math.floor(Math.random() * 62)]).join(''),
}

const FIRST_NAMES = ['jane', 'omar', 'li', 'sofia', 'noah', 'amara', 'lukas', 'chloe', 'mateo', 'yuki']
const LAST_NAMES = ['doe', 'haddad', 'chen', 'rossi', 'okafor', 'novak', 'dubois', 'silva', 'tanaka']
const MAIL_DOMAINS = ['example.com', 'mail.example.org', 'acme-corp.example']
const BROKEN_EMAILS = ['jane.doe@@example.com', 'omar.haddad(at)example.com', 'li.chen@example', 'sofia rossi@example.com', '']
// Latin-1 has these; their single bytes (0xE9, 0xFC, 0xD8, ...) are invalid UTF-8.
const LATIN1_COMPANIES = ['Société Générale', 'Müller & Söhne GmbH', 'Øresund Logística', 'Café Niño SL', 'Ålesund Fiskerí AS']

const email = (r: Rng) => `${r.pick(FIRST_NAMES)}.${r.pick(LAST_NAMES)}@${r.pick(MAIL_DOMAINS)}`
const cents = (r: Rng) => r.int(1_500, 250_000)
const today = () => new Date().toISOString().slice(0, 10)

function json(value: object, facts: Facts = {}): BodyDraft {
  return { content: Buffer.from(JSON.stringify(value)), contentType: 'application/json', contentEncoding: 'utf-8', facts }
}

function varint(n: number): number[] {
  const bytes: number[] = []
  for (; n > 0x7f; n >>>= 7) bytes.push((n & 0x7f) | 0x80)
  bytes.push(n)
  return bytes
}

/** Protobuf wire format: varints for numbers, length-delimited for strings and bytes. */
function protobuf(fields: readonly [number, number | string | Buffer][]): Buffer {
  const bytes: number[] = []
  for (const [field, value] of fields) {
    if (typeof value === 'number') {
      bytes.push(...varint(field << 3), ...varint(value))
      continue
    }
    const data = typeof value === 'string' ? Buffer.from(value) : value
    bytes.push(...varint((field << 3) | 2), ...varint(data.length), ...data)
  }
  return Buffer.from(bytes)
}

// ---- orders: Spring order service, Node pricing service, MassTransit fulfilment worker -----------------------------

function orderCreated(entity: string, r: Rng): BodyDraft {
  const sku = String(r.int(10_000, 99_999))
  const warehouse = String(r.int(1, 9))
  const customerEmail = email(r)
  return json(
    {
      orderId: entity,
      customer: { id: `cust-${r.int(1000, 9999)}`, email: customerEmail },
      lines: [{ sku, quantity: r.int(1, 4), unitPrice: r.int(499, 19_999) / 100, warehouse: `WH-${warehouse}` }],
      currency: 'EUR',
      placedAt: new Date().toISOString(),
    },
    { sku, warehouse },
  )
}

/** What a hand-rolled serializer upstream produced for a while: a trailing comma Jackson refuses. */
function malformedOrderCreated(entity: string, r: Rng): BodyDraft {
  const text = `{"orderId":"${entity}","lines":[{"sku":"${r.int(10_000, 99_999)}","quantity":${r.int(1, 4)},}],"currency":"EUR"}`
  const column = text.indexOf(',}') + 2 // 1-based column of the '}'
  return { content: Buffer.from(text), contentType: 'application/json', contentEncoding: 'UTF-8', facts: { column: String(column) } }
}

function pricingRequested(entity: string, r: Rng, customerEmail = email(r)): BodyDraft {
  return json(
    {
      orderId: entity,
      customerEmail,
      items: Array.from({ length: r.int(1, 3) }, () => ({ sku: String(r.int(10_000, 99_999)), quantity: r.int(1, 3) })),
      promotionCode: r.pick(['SPRING10', 'WELCOME5', 'FREESHIP', null]),
    },
    { email: customerEmail },
  )
}

function shipmentRequested(entity: string, r: Rng): BodyDraft {
  const carrier = r.pick(['Dhl', 'Ups', 'PostNl'])
  return json(
    { shipmentId: `shp-${r.int(100_000, 999_999)}`, orderId: entity, carrier: carrier.toUpperCase(), parcels: r.int(1, 3), country: r.pick(['DE', 'NL', 'FR', 'BE']) },
    { carrier, timeoutMs: carrier === 'Ups' ? '15000' : '30000' },
  )
}

function reservationHold(entity: string, r: Rng): BodyDraft {
  return json({ reservationId: `res-${r.alnum(10)}`, orderId: entity, sku: String(r.int(10_000, 99_999)), quantity: r.int(1, 4), holdSeconds: 900 })
}

const orderService: ServiceSpec = { name: 'order-service', framework: 'spring', versions: ['1.4.2', '1.5.0'] }
const pricingService: ServiceSpec = { name: 'pricing-service', framework: 'lazarus', versions: ['1.4.2', '1.5.0'] }
const fulfilmentWorker: ServiceSpec = { name: 'Acme.Fulfilment.Worker', framework: 'masstransit', versions: ['3.2.0', '3.2.1'] }

const ORDERS: DemoApp = {
  name: 'orders',
  producer: 'checkout-web',
  entityKeyHeader: true,
  entity: (n) => `order-${1000 + n}`,
  routes: [
    {
      routingKey: 'order.created',
      messageType: 'com.acme.orders.events.OrderCreated',
      handler: 'com.acme.orders.messaging.OrderEventsListener',
      service: orderService,
      body: orderCreated,
      failures: [
        {
          weight: 30,
          error: (f) => ({
            type: 'com.acme.orders.InventoryUnavailableException',
            message: `SKU ${f.sku} out of stock in warehouse WH-${f.warehouse}`,
            frames: [
              frame('com.acme.orders.inventory.InventoryClient.reserve', 'InventoryClient.java', 88),
              frame('com.acme.orders.OrderService.placeOrder', 'OrderService.java', 142),
              frame('com.acme.orders.messaging.OrderEventsListener.onOrderCreated', 'OrderEventsListener.java', 51),
            ],
          }),
        },
        {
          weight: 6,
          attempts: 1, // a parse error never heals; the listener rejects it on first sight
          kind: 'invalid',
          body: malformedOrderCreated,
          error: (f) => ({
            type: 'com.acme.orders.messaging.MalformedEventException',
            message: 'Cannot read OrderCreated payload',
            frames: [
              frame('com.acme.orders.messaging.EventReader.read', 'EventReader.java', 37),
              frame('com.acme.orders.messaging.OrderEventsListener.onOrderCreated', 'OrderEventsListener.java', 44),
            ],
            cause: {
              type: 'com.fasterxml.jackson.core.JsonParseException',
              message:
                "Unexpected character ('}' (code 125)): was expecting double-quote to start field name\n" +
                ` at [Source: REDACTED (\`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION\` disabled); line: 1, column: ${f.column}]`,
              frames: [
                frame('com.fasterxml.jackson.core.JsonParser._constructReadException', 'JsonParser.java', 2648),
                frame('com.fasterxml.jackson.core.base.ParserMinimalBase._reportUnexpectedChar', 'ParserMinimalBase.java', 685),
                frame('com.fasterxml.jackson.core.json.UTF8StreamJsonParser._handleOddName', 'UTF8StreamJsonParser.java', 2091),
                frame('com.fasterxml.jackson.databind.ObjectMapper._readMapAndClose', 'ObjectMapper.java', 4917),
                frame('com.fasterxml.jackson.databind.ObjectMapper.readValue', 'ObjectMapper.java', 3900),
                frame('com.acme.orders.messaging.EventReader.read', 'EventReader.java', 35),
                frame('com.acme.orders.messaging.OrderEventsListener.onOrderCreated', 'OrderEventsListener.java', 44),
              ],
            },
          }),
        },
      ],
    },
    {
      routingKey: 'order.pricing.requested',
      messageType: 'orders.PricingRequested',
      handler: 'handlePricingRequested',
      service: pricingService,
      body: pricingRequested,
      failures: [
        {
          weight: 18,
          versions: ['1.5.0'], // the promotions rewrite shipped in 1.5.0
          error: () => ({
            type: 'TypeError',
            message: "Cannot read properties of undefined (reading 'currency')",
            frames: [
              frame('applyPromotion', '/app/dist/pricing/promotions.js', 57, 34),
              frame('priceOrder', '/app/dist/pricing/price-order.js', 23, 18),
              frame('async handlePricingRequested', '/app/dist/handlers/pricing-requested.js', 12, 5),
            ],
          }),
        },
        {
          weight: 6,
          attempts: 1,
          kind: 'invalid',
          body: (entity, r) => pricingRequested(entity, r, r.pick(BROKEN_EMAILS)),
          error: (f) => ({
            type: 'ValidationError',
            message: `field "email" must be a valid address, got "${f.email}"`,
            frames: [
              frame('assertValid', '/app/dist/validation/assert-valid.js', 19, 11),
              frame('parsePricingRequest', '/app/dist/handlers/pricing-requested.js', 8, 19),
              frame('handlePricingRequested', '/app/dist/handlers/pricing-requested.js', 11, 17),
            ],
          }),
        },
      ],
    },
    {
      routingKey: 'shipment.requested',
      messageType: 'Acme.Fulfilment.Contracts.ShipmentRequested',
      handler: 'Acme.Fulfilment.Consumers.ShipmentRequestedConsumer',
      service: fulfilmentWorker,
      body: shipmentRequested,
      failures: [
        {
          weight: 12,
          kind: 'transient',
          error: (f) => ({
            type: 'System.TimeoutException',
            message: `The operation has timed out after ${f.timeoutMs}ms`,
            frames: [
              frame(`Acme.Fulfilment.Carriers.${f.carrier}Client.BookPickupAsync(Shipment shipment, CancellationToken cancellationToken)`, `/src/Acme.Fulfilment/Carriers/${f.carrier}Client.cs`, 112),
              ASYNC_BOUNDARY,
              frame('Acme.Fulfilment.Consumers.ShipmentRequestedConsumer.Consume(ConsumeContext`1 context)', '/src/Acme.Fulfilment/Consumers/ShipmentRequestedConsumer.cs', 47),
            ],
          }),
        },
      ],
    },
  ],
  side: [{ name: 'reservation-holds', kind: 'expiring', routingKey: 'reservation.hold', weight: 8, messageType: 'orders.ReservationHold', body: reservationHold }],
}

// ---- billing: NServiceBus endpoints, Rebus workers, an EasyNetQ renderer, a webhook receiver without retries --------

function capturePayment(entity: string, r: Rng): BodyDraft {
  const paymentId = `pay_${r.alnum(14)}`
  return json({ paymentId, invoiceId: entity, amount: { value: cents(r), currency: 'EUR' }, provider: 'adyen' }, { paymentId, invoice: entity })
}

function invoiceIssued(entity: string, r: Rng, country = r.pick(['DE', 'FR', 'NL', 'GB', 'ES'])): BodyDraft {
  const issuedOn = today()
  return json(
    { invoiceId: entity, customerId: `cust-${r.int(1000, 9999)}`, country, issuedOn, total: { value: cents(r), currency: 'EUR' } },
    { country, issuedOn },
  )
}

function invoiceEmail(entity: string, r: Rng): BodyDraft {
  const to = email(r)
  return json({ invoiceId: entity, to, template: 'invoice-issued', locale: r.pick(['en-GB', 'de-DE', 'fr-FR']) }, { email: to })
}

/** A legacy ERP still exports ISO-8859-1 CSV lines; their accented bytes are not valid UTF-8. */
function ledgerLine(entity: string, r: Rng): BodyDraft {
  const text = `${entity};${r.pick(LATIN1_COMPANIES)};${(cents(r) / 100).toFixed(2).replace('.', ',')};EUR\r\n`
  const content = Buffer.from(text, 'latin1')
  const badIndex = content.findIndex((byte) => byte >= 0x80)
  return {
    content,
    contentType: 'text/csv; charset=iso-8859-1',
    facts: { badIndex: String(badIndex), badByte: content[badIndex]!.toString(16).toUpperCase() },
  }
}

function renderInvoicePdf(entity: string, r: Rng): BodyDraft {
  return json({ invoiceId: entity, template: r.pick(['standard-v3', 'compact-v1']), locale: r.pick(['en-GB', 'de-DE']) }, { invoice: entity })
}

function pspWebhook(entity: string, r: Rng): BodyDraft {
  return json({
    provider: 'adyen',
    eventCode: r.pick(['CAPTURE_FAILED', 'CHARGEBACK', 'REFUND_FAILED']),
    pspReference: r.alnum(16).toUpperCase(),
    merchantReference: entity,
    receivedAt: new Date().toISOString(),
  })
}

const paymentsEndpoint: ServiceSpec = { name: 'Acme.Billing.Payments', framework: 'nservicebus', versions: ['4.8.0', '4.9.1'] }
const invoicingEndpoint: ServiceSpec = { name: 'Acme.Billing.Invoicing', framework: 'nservicebus', versions: ['4.8.0', '4.9.1'] }
const mailer: ServiceSpec = { name: 'Acme.Billing.Mailer', framework: 'rebus', versions: ['2.1.0'] }
const ledgerExport: ServiceSpec = { name: 'Acme.Billing.LedgerExport', framework: 'rebus', versions: ['1.0.7'] }
const renderer: ServiceSpec = { name: 'Acme.Billing.Renderer', framework: 'easynetq', versions: ['0.9.4'] }

const BILLING: DemoApp = {
  name: 'billing',
  producer: 'billing-api',
  entityKeyHeader: false, // billing keys its entities by correlation id only
  entity: (n) => `inv-${new Date().getFullYear()}-${String(4200 + n).padStart(6, '0')}`,
  routes: [
    {
      routingKey: 'payment.capture.requested',
      messageType: 'Acme.Billing.Messages.CapturePayment',
      handler: 'Acme.Billing.Payments.CapturePaymentHandler',
      service: paymentsEndpoint,
      body: capturePayment,
      failures: [
        {
          weight: 16,
          kind: 'transient',
          error: (f) => ({
            type: 'Acme.Billing.Payments.PaymentGatewayException',
            message: `Capture of ${f.paymentId} for invoice ${f.invoice} failed: provider returned 503 Service Unavailable`,
            frames: [
              frame('Acme.Billing.Payments.Gateways.AdyenGateway.CaptureAsync(PaymentId paymentId, Money amount, CancellationToken cancellationToken)', '/src/Acme.Billing.Payments/Gateways/AdyenGateway.cs', 91),
              frame('Acme.Billing.Payments.CapturePaymentHandler.Handle(CapturePayment message, IMessageHandlerContext context)', '/src/Acme.Billing.Payments/Handlers/CapturePaymentHandler.cs', 41),
            ],
            cause: {
              type: 'System.Net.Http.HttpRequestException',
              message: 'Response status code does not indicate success: 503 (Service Unavailable).',
              frames: [
                frame('System.Net.Http.HttpResponseMessage.EnsureSuccessStatusCode()'),
                frame('Acme.Billing.Payments.Gateways.AdyenGateway.CaptureAsync(PaymentId paymentId, Money amount, CancellationToken cancellationToken)', '/src/Acme.Billing.Payments/Gateways/AdyenGateway.cs', 84),
              ],
            },
          }),
        },
      ],
    },
    {
      routingKey: 'invoice.issued',
      messageType: 'Acme.Billing.Messages.InvoiceIssued',
      handler: 'Acme.Billing.Invoicing.InvoiceIssuedHandler',
      service: invoicingEndpoint,
      body: invoiceIssued,
      failures: [
        {
          weight: 5,
          kind: 'invalid',
          body: (entity, r) => invoiceIssued(entity, r, r.pick(['XK', 'GI', 'AX'])),
          error: (f) => ({
            type: 'Acme.Billing.Tax.TaxRateNotFoundException',
            message: `No VAT rate configured for country '${f.country}' on ${f.issuedOn}`,
            frames: [
              frame('Acme.Billing.Tax.VatRateProvider.GetRate(CountryCode country, DateOnly date)', '/src/Acme.Billing.Invoicing/Tax/VatRateProvider.cs', 52),
              frame('Acme.Billing.Invoicing.InvoiceIssuedHandler.Handle(InvoiceIssued message, IMessageHandlerContext context)', '/src/Acme.Billing.Invoicing/Handlers/InvoiceIssuedHandler.cs', 37),
            ],
          }),
        },
        {
          weight: 4,
          kind: 'transient',
          error: (_, r) => ({
            type: 'Microsoft.Data.SqlClient.SqlException',
            message: `Transaction (Process ID ${r.int(51, 140)}) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.`,
            frames: [
              frame('Microsoft.Data.SqlClient.SqlConnection.OnError(SqlException exception, Boolean breakConnection, Action`1 wrapCloseInAction)'),
              frame('Microsoft.Data.SqlClient.SqlCommand.EndExecuteNonQueryInternal(IAsyncResult asyncResult)'),
              ASYNC_BOUNDARY,
              frame('Acme.Billing.Invoicing.Persistence.InvoiceRepository.SaveAsync(Invoice invoice, CancellationToken cancellationToken)', '/src/Acme.Billing.Invoicing/Persistence/InvoiceRepository.cs', 73),
              frame('Acme.Billing.Invoicing.InvoiceIssuedHandler.Handle(InvoiceIssued message, IMessageHandlerContext context)', '/src/Acme.Billing.Invoicing/Handlers/InvoiceIssuedHandler.cs', 44),
            ],
          }),
        },
      ],
    },
    {
      routingKey: 'invoice.email.requested',
      messageType: 'Acme.Billing.Messages.SendInvoiceEmail',
      handler: 'Acme.Billing.Mailer.SendInvoiceEmailHandler',
      service: mailer,
      body: invoiceEmail,
      failures: [
        {
          weight: 6,
          error: (f) => ({
            type: 'System.Net.Mail.SmtpFailedRecipientException',
            message: `Mailbox unavailable. The server response was: 5.1.1 <${f.email}>: Recipient address rejected: User unknown in virtual mailbox table`,
            frames: [
              frame('System.Net.Mail.SmtpTransport.SendMail(MailAddress sender, MailAddressCollection recipients, String deliveryNotify, Boolean allowUnicode, SmtpFailedRecipientException& exception)'),
              frame('System.Net.Mail.SmtpClient.Send(MailMessage message)'),
              frame('Acme.Billing.Mailer.InvoiceMailer.Send(SendInvoiceEmail command)', '/src/Acme.Billing.Mailer/InvoiceMailer.cs', 66),
              frame('Acme.Billing.Mailer.SendInvoiceEmailHandler.Handle(SendInvoiceEmail message)', '/src/Acme.Billing.Mailer/SendInvoiceEmailHandler.cs', 29),
            ],
          }),
        },
      ],
    },
    {
      routingKey: 'ledger.export.requested',
      messageType: 'Acme.Billing.Messages.ExportLedgerLine',
      handler: 'Acme.Billing.LedgerExport.ExportLedgerHandler',
      service: ledgerExport,
      body: ledgerLine,
      failures: [
        {
          weight: 4,
          kind: 'invalid',
          error: (f) => ({
            type: 'System.Text.DecoderFallbackException',
            message: `Unable to translate bytes [${f.badByte}] at index ${f.badIndex} from specified code page to Unicode.`,
            frames: [
              frame('System.Text.DecoderExceptionFallbackBuffer.Throw(Byte[] bytesUnknown, Int32 index)'),
              frame('System.Text.DecoderExceptionFallbackBuffer.Fallback(Byte[] bytesUnknown, Int32 index)'),
              frame('System.Text.UTF8Encoding.GetString(Byte[] bytes, Int32 index, Int32 count)'),
              frame('Acme.Billing.LedgerExport.LedgerLineParser.Parse(Byte[] body)', '/src/Acme.Billing.LedgerExport/LedgerLineParser.cs', 24),
              frame('Acme.Billing.LedgerExport.ExportLedgerHandler.Handle(ExportLedgerLine message)', '/src/Acme.Billing.LedgerExport/ExportLedgerHandler.cs', 31),
            ],
          }),
        },
      ],
    },
    {
      routingKey: 'invoice.pdf.requested',
      messageType: 'Acme.Billing.Messages.RenderInvoicePdf',
      handler: 'Acme.Billing.Renderer.RenderInvoicePdfHandler',
      service: renderer,
      body: renderInvoicePdf,
      failures: [
        {
          weight: 5,
          error: (f) => ({
            type: 'System.IO.IOException',
            message: `The process cannot access the file '/var/lib/invoices/${f.invoice}.pdf' because it is being used by another process.`,
            frames: [
              frame('Microsoft.Win32.SafeHandles.SafeFileHandle.Init(String path, FileMode mode, FileAccess access, FileShare share, FileOptions options, Int64 preallocationSize)'),
              frame('System.IO.FileStream..ctor(String path, FileMode mode, FileAccess access, FileShare share)'),
              frame('Acme.Billing.Renderer.PdfStore.WriteAsync(InvoiceId id, Stream pdf)', '/src/Acme.Billing.Renderer/PdfStore.cs', 40),
              frame('Acme.Billing.Renderer.RenderInvoicePdfHandler.HandleAsync(RenderInvoicePdf message, CancellationToken cancellationToken)', '/src/Acme.Billing.Renderer/RenderInvoicePdfHandler.cs', 33),
            ],
          }),
        },
      ],
    },
  ],
  side: [{ name: 'webhooks', kind: 'no-retry', routingKey: 'webhook.psp.received', weight: 6, messageType: 'billing.PspWebhook', body: pspWebhook }],
}

// ---- search-indexer: a Node service using Lazarus' own headers; binary snapshots; a capped live-update queue ------

function documentUpsert(entity: string, r: Rng): BodyDraft {
  return json({
    docId: entity,
    title: `${r.pick(['Senior', 'Junior', 'Lead', 'Staff'])} ${r.pick(['Backend Engineer', 'Data Analyst', 'Product Designer', 'SRE'])}`,
    location: r.pick(['Berlin', 'Amsterdam', 'Lisbon', 'Remote']),
    tags: [r.pick(['go', 'kotlin', 'typescript', 'python']), r.pick(['kubernetes', 'postgres', 'kafka'])],
    updatedAt: new Date().toISOString(),
  })
}

function embeddingRequested(entity: string, r: Rng): BodyDraft {
  return json({ docId: entity, model: 'e5-large-v2', chunks: r.int(1, 24) })
}

/** A snapshot cut short by the producer's buggy batching: the last field claims more bytes than remain. */
function truncatedSnapshot(entity: string, r: Rng): BodyDraft {
  const blob = randomBytes(r.int(40, 160))
  const full = protobuf([
    [1, Number(entity.replace(/\D/g, ''))],
    [2, `snapshot of ${entity}`],
    [4, Math.floor(Date.now() / 1000)],
    [3, blob],
  ])
  const cut = r.int(4, Math.min(30, blob.length - 1))
  const content = full.subarray(0, full.length - cut)
  const offset = full.length - blob.length
  return {
    content,
    contentType: 'application/x-protobuf',
    facts: { offset: String(offset), need: String(blob.length), length: String(content.length) },
  }
}

function liveUpdate(entity: string, r: Rng): BodyDraft {
  return json({ docId: entity, field: r.pick(['salaryMax', 'status', 'applyUrl']), changedAt: new Date().toISOString() })
}

const indexer: ServiceSpec = { name: 'search-indexer', framework: 'lazarus', versions: ['2.7.3', '2.8.0'] }

const SEARCH_INDEXER: DemoApp = {
  name: 'search-indexer',
  producer: 'catalog-service',
  entityKeyHeader: true,
  entity: (n) => `doc-${58_000 + n}`,
  routes: [
    {
      routingKey: 'document.upsert',
      messageType: 'search.DocumentUpserted',
      handler: 'handleDocumentUpsert',
      service: indexer,
      body: documentUpsert,
      failures: [
        {
          weight: 14,
          attempts: 4,
          kind: 'transient',
          error: (_, r) => {
            const bytes = r.int(200_000_000, 214_000_000)
            return {
              type: 'ResponseError',
              message:
                'es_rejected_execution_exception: [es_rejected_execution_exception] Reason: rejected execution of coordinating operation ' +
                `[coordinating_and_primary_bytes=${bytes}, replica_bytes=0, all_bytes=${bytes}, coordinating_operation_bytes=${r.int(20_000, 90_000)}, max_coordinating_and_primary_bytes=214748364]`,
              frames: [
                frame('SniffingTransport._request', '/app/node_modules/@elastic/transport/lib/Transport.js', 543, 27),
                frame('async Client.BulkApi [as bulk]', '/app/node_modules/@elastic/elasticsearch/lib/api/api/bulk.js', 43, 12),
                frame('async indexDocument', '/app/dist/indexing/index-document.js', 31, 17),
                frame('async handleDocumentUpsert', '/app/dist/handlers/document-upsert.js', 14, 3),
              ],
            }
          },
        },
      ],
    },
    {
      routingKey: 'document.embedding.requested',
      messageType: 'search.EmbeddingRequested',
      handler: 'handleEmbeddingRequested',
      service: indexer,
      body: embeddingRequested,
      failures: [
        {
          weight: 10,
          versions: ['2.8.0'], // semantic search, and its embeddings service, arrived in 2.8.0
          kind: 'transient',
          error: (f) => ({
            type: 'HTTPError',
            message: `Response code 503 (Service Unavailable) from POST http://embeddings.search.svc.cluster.local:8080/v1/embed?doc=${f.entity}&model=e5-large-v2`,
            frames: [
              frame('Request.<anonymous>', '/app/node_modules/got/dist/source/as-promise/index.js', 118, 42),
              frame('async embedChunks', '/app/dist/embeddings/embed-chunks.js', 27, 20),
              frame('async handleEmbeddingRequested', '/app/dist/handlers/embedding-requested.js', 16, 3),
            ],
          }),
        },
      ],
    },
    {
      routingKey: 'document.snapshot',
      messageType: 'search.DocumentSnapshot',
      handler: 'handleDocumentSnapshot',
      service: indexer,
      body: truncatedSnapshot,
      failures: [
        {
          weight: 5,
          attempts: 1,
          kind: 'invalid',
          error: (f) => ({
            type: 'RangeError',
            message: `index out of range: ${f.offset} + ${f.need} > ${f.length}`,
            frames: [
              frame('indexOutOfRange', '/app/node_modules/protobufjs/src/reader.js', 13, 12),
              frame('Reader.bytes', '/app/node_modules/protobufjs/src/reader.js', 305, 19),
              frame('Function.decode', '/app/dist/generated/document_snapshot.js', 212, 38),
              frame('handleDocumentSnapshot', '/app/dist/handlers/document-snapshot.js', 9, 36),
            ],
          }),
        },
      ],
    },
  ],
  side: [{ name: 'live-updates', kind: 'capped', routingKey: 'document.live', weight: 8, messageType: 'search.LiveUpdate', body: liveUpdate }],
}

const DEMO_APPS: readonly DemoApp[] = [ORDERS, BILLING, SEARCH_INDEXER]

const BROKER_REASON: Record<SideQueueKind, string> = { expiring: 'expired', capped: 'maxlen', 'no-retry': 'rejected' }

const FRAMEWORK_LABEL: Record<FrameworkStyle, string> = {
  spring: 'Spring AMQP',
  masstransit: 'MassTransit',
  nservicebus: 'NServiceBus',
  rebus: 'Rebus',
  easynetq: 'EasyNetQ',
  lazarus: 'Lazarus x-error-*',
}

function topologySpec(app: DemoApp): AppTopologySpec {
  return {
    app: app.name,
    routingKeys: app.routes.map(({ routingKey }) => routingKey),
    sideQueues: app.side.map(({ name, kind, routingKey }) => ({ name, kind, routingKey })),
  }
}

// =================================================================================================================
// Planning: how many dead letters of each kind, and what to publish

/** One way a message ends up in a DLQ, with its share of the run. */
type Fate =
  | { kind: 'work'; app: DemoApp; route: WorkRoute; failure: FailureScenario; weight: number; label: string }
  | { kind: 'side'; app: DemoApp; side: SideRoute; weight: number; label: string }

function fatesOf(app: DemoApp): Fate[] {
  const work = app.routes.flatMap((route) =>
    route.failures.map((failure): Fate => ({ kind: 'work', app, route, failure, weight: failure.weight, label: FRAMEWORK_LABEL[route.service.framework] })),
  )
  const side = app.side.map((s): Fate => ({ kind: 'side', app, side: s, weight: s.weight, label: `DLX ${BROKER_REASON[s.kind]}` }))
  return [...work, ...side]
}

/** Splits `total` by weight (largest remainder), giving every share at least one when there are enough to go round. */
export function allocate(total: number, weights: readonly number[]): number[] {
  const floor = total >= weights.length ? 1 : 0
  const rest = total - floor * weights.length
  const sum = weights.reduce((a, b) => a + b, 0)
  const exact = weights.map((w) => (rest * w) / sum)
  const counts = exact.map((x) => floor + Math.floor(x))
  let left = total - counts.reduce((a, b) => a + b, 0)
  const byRemainder = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r)
  for (const { i } of byRemainder) {
    if (left-- <= 0) break
    counts[i]! += 1
  }
  return counts
}

/** What the failing consumer needs to know about a message it will receive: decided up front, looked up by id. */
type WorkPlan = { topology: AppTopology; route: WorkRoute; failure: FailureScenario; version: string; host: string; facts: Facts }

type PlanBook = Map<string, WorkPlan>

type Publication = { exchange: string; routingKey: string; content: Buffer; options: Options.Publish }

type DlqTarget = { topology: AppTopology; baseline: number; added: number; breakdown: Record<string, number> }

const shortHash = (text: string, length: number) => createHash('sha1').update(text).digest('hex').slice(0, length)

/** A Kubernetes-style pod name, stable per service version, so hosts line up with releases. */
function podName(service: string, version: string, replica: number): string {
  const base = service.toLowerCase().replace(/[^a-z0-9]+/g, '-')
  return `${base}-${shortHash(`${service}@${version}`, 10)}-${shortHash(`${service}@${version}#${replica}`, 5)}`
}

function baseOptions(app: DemoApp, messageType: string, entity: string, draft: BodyDraft): Options.Publish & { headers: Headers } {
  return {
    messageId: randomUUID(),
    correlationId: entity,
    timestamp: Math.floor(Date.now() / 1000),
    appId: app.producer,
    type: messageType,
    contentType: draft.contentType,
    contentEncoding: draft.contentEncoding,
    persistent: true,
    headers: app.entityKeyHeader ? { 'x-entity-key': entity } : {},
  }
}

function workPublication(fate: Extract<Fate, { kind: 'work' }>, topology: AppTopology, entity: string, book: PlanBook): Publication {
  const { app, route, failure } = fate
  const draft = (failure.body ?? route.body)(entity, rng)
  const outgoing = applySenderConventions(
    { content: draft.content, options: baseOptions(app, route.messageType, entity, draft) },
    {
      framework: route.service.framework,
      messageType: route.messageType,
      destination: topology.exchange,
      sentAt: new Date(),
      sender: { endpoint: app.producer, host: podName(app.producer, 'current', 0) },
    },
  )
  const version = rng.pick(failure.versions ?? route.service.versions)
  book.set(String(outgoing.options.messageId), {
    topology,
    route,
    failure,
    version,
    host: podName(route.service.name, version, rng.int(0, 1)),
    facts: { entity, ...draft.facts },
  })
  return { exchange: topology.exchange, routingKey: route.routingKey, ...outgoing }
}

function sidePublication(app: DemoApp, side: SideRoute, topology: AppTopology, entity: string): Publication {
  const draft = side.body(entity, rng)
  return { exchange: topology.exchange, routingKey: side.routingKey, content: draft.content, options: baseOptions(app, side.messageType, entity, draft) }
}

/** A capped queue only overflows once full: top it up first, so exactly `count` messages are pushed out. */
async function sidePublicationCount(connection: ChannelModel, topology: AppTopology, side: SideRoute, count: number): Promise<number> {
  if (side.kind !== 'capped') return count
  const queue = topology.sideQueues.find((q) => q.name === side.name)!.queue
  const depth = (await inspectQueue(connection, queue))?.messageCount ?? 0
  return count + Math.max(0, CAPPED_QUEUE_MAX_LENGTH - depth)
}

/** Entities repeat, as real failures cluster on a few orders or invoices. */
function entityPicker(app: DemoApp, messages: number): () => string {
  const pool = Math.max(8, Math.ceil(messages / 3))
  return () => app.entity(rng.int(0, pool - 1))
}

/** Fisher-Yates: apps and routes arrive interleaved, as live traffic does. */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i)
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

type RunPlan = { publications: Publication[]; targets: DlqTarget[] }

async function planRun(connection: ChannelModel, topologies: readonly AppTopology[], count: number, book: PlanBook): Promise<RunPlan> {
  const fates = DEMO_APPS.flatMap(fatesOf)
  const counts = allocate(count, fates.map((f) => f.weight))
  const publications: Publication[] = []
  const targets: DlqTarget[] = []
  for (const [a, app] of DEMO_APPS.entries()) {
    const topology = topologies[a]!
    const baseline = (await inspectQueue(connection, topology.dlq))?.messageCount ?? 0
    const target: DlqTarget = { topology, baseline, added: 0, breakdown: {} }
    const ownFates = fates.map((fate, i) => ({ fate, n: counts[i]! })).filter(({ fate }) => fate.app === app)
    const nextEntity = entityPicker(app, ownFates.reduce((sum, { n }) => sum + n, 0))
    for (const { fate, n } of ownFates) {
      target.added += n
      target.breakdown[fate.label] = (target.breakdown[fate.label] ?? 0) + n
      if (fate.kind === 'work') {
        for (let i = 0; i < n; i++) publications.push(workPublication(fate, topology, nextEntity(), book))
      } else {
        const total = n === 0 ? 0 : await sidePublicationCount(connection, topology, fate.side, n)
        for (let i = 0; i < total; i++) publications.push(sidePublication(app, fate.side, topology, nextEntity()))
      }
    }
    targets.push(target)
  }
  return { publications: shuffled(publications), targets }
}

async function publishAll(connection: ChannelModel, publications: readonly Publication[]): Promise<void> {
  const ch = await connection.createConfirmChannel()
  try {
    for (const p of publications) {
      if (!ch.publish(p.exchange, p.routingKey, p.content, p.options)) await once(ch, 'drain')
    }
    await ch.waitForConfirms()
  } finally {
    await ch.close().catch(() => {})
  }
}

// =================================================================================================================
// The failing consumers

type Tally = { discarded: number; refused: number; channelErrors: string[] } & ReplayTally

type ConsumerHandle = { stop(): Promise<void> }

/** Times the broker dead-lettered this message out of `queue` because a consumer rejected it. */
function rejectionsFrom(msg: ConsumeMessage, queue: string): number {
  const deaths: unknown = msg.properties.headers?.['x-death']
  if (!Array.isArray(deaths)) return 0
  const entry = deaths.find((d: { queue?: string; reason?: string }) => d.queue === queue && d.reason === 'rejected')
  return entry ? Number(entry.count) : 0
}

/** Whether the message expired out of the last delay queue: it has been through every retry tier. */
function passedLastTier(msg: ConsumeMessage, lastDelayQueue: string): boolean {
  const deaths: unknown = msg.properties.headers?.['x-death']
  return Array.isArray(deaths) && deaths.some((d: { queue?: string; reason?: string }) => d.queue === lastDelayQueue && d.reason === 'expired')
}

/** Acks and nacks may race a closing channel during shutdown after a timeout; nothing is left to do then. */
function quietly(action: () => void): void {
  try {
    action()
  } catch {
    // channel already closed
  }
}

function moveToDlq(ch: ConfirmChannel, msg: ConsumeMessage, plan: WorkPlan, attempts: number, book: PlanBook, tally: Tally): void {
  const { topology, route, failure } = plan
  const copy = buildDeadLetterCopy({
    delivery: msg,
    queue: topology.workQueue,
    error: failure.error(plan.facts, rng),
    attempts,
    failedAt: new Date(),
    retryDelayMs: topology.retryQueues.short.ttlMs,
    service: { name: route.service.name, version: plan.version, host: plan.host, framework: route.service.framework },
    handler: route.handler,
    messageType: route.messageType,
    failureKind: failure.kind,
  })
  // Ack only once the copy is confirmed, as a recoverer must; a refused copy goes round the retry loop again.
  ch.publish(topology.deadExchange, copy.routingKey, copy.content, copy.options, (err) => {
    if (err) {
      tally.refused++
      quietly(() => ch.nack(msg, false, false))
      return
    }
    book.delete(String(msg.properties.messageId))
    quietly(() => ch.ack(msg))
  })
}

function handleWorkDelivery(ch: ConfirmChannel, msg: ConsumeMessage, topology: AppTopology, book: PlanBook, tally: Tally): void {
  const plan = book.get(String(msg.properties.messageId))
  if (!plan && isReplayed(msg)) return handleReplayed(ch, msg, topology.deadExchange, tally)
  if (!plan) {
    // Left in the retry loop by an interrupted earlier run (or another seed on the same prefix): no plan for it.
    tally.discarded++
    ch.ack(msg)
    return
  }
  const attempts = rejectionsFrom(msg, topology.workQueue) + 1
  const { maxDeliveries, lastDelayQueue } = topology.build.consumerRule
  // The builder's consumer rule (docs/topology-builder.md#the-consumer-rule): nack to escalate, park after the last tier.
  if (attempts < (plan.failure.attempts ?? maxDeliveries) && !passedLastTier(msg, lastDelayQueue)) {
    ch.nack(msg, false, false) // to the next delay queue via the work queue's DLX; the broker counts it in x-death
    return
  }
  moveToDlq(ch, msg, plan, attempts, book, tally)
}

const PREFETCH = 200

async function consume(ch: Channel, queue: string, tally: Tally, handle: (msg: ConsumeMessage) => void): Promise<ConsumerHandle> {
  // Reported by the wait loop, which would otherwise only notice by timing out.
  ch.on('error', (error: Error) => tally.channelErrors.push(`consumer of ${queue}: ${error.message}`))
  await ch.prefetch(PREFETCH)
  const { consumerTag } = await ch.consume(queue, (msg) => msg && handle(msg), { noAck: false })
  return {
    async stop() {
      await ch.cancel(consumerTag).catch(() => {})
      await ch.close().catch(() => {})
    },
  }
}

async function startConsumers(connection: ChannelModel, topology: AppTopology, book: PlanBook, tally: Tally): Promise<ConsumerHandle[]> {
  const work = await connection.createConfirmChannel()
  const handles = [await consume(work, topology.workQueue, tally, (msg) => handleWorkDelivery(work, msg, topology, book, tally))]
  for (const side of topology.sideQueues.filter((q) => q.kind === 'no-retry')) {
    // A service with no retry policy at all: every failure is a plain reject into the broker's DLX.
    const ch = await connection.createChannel()
    handles.push(await consume(ch, side.queue, tally, (msg) => ch.nack(msg, false, false)))
  }
  return handles
}

// =================================================================================================================
// Waiting for the dead letters

type WaitOptions = {
  connection: ChannelModel
  targets: readonly DlqTarget[]
  book: PlanBook
  tally: Tally
  timeoutMs: number
  pollMs: number
  log: (line: string) => void
}

type DlqStatus = DlqTarget & { depth: number; consumers: number }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function dlqStatuses(connection: ChannelModel, targets: readonly DlqTarget[]): Promise<DlqStatus[]> {
  return Promise.all(
    targets.map(async (t) => {
      const q = await inspectQueue(connection, t.topology.dlq)
      return { ...t, depth: q?.messageCount ?? 0, consumers: q?.consumerCount ?? 0 }
    }),
  )
}

/** Nothing of this run is still on its way: no plan awaits a failure, and side queues hold only their backlog. */
async function runSettled(connection: ChannelModel, targets: readonly DlqTarget[], book: PlanBook): Promise<boolean> {
  if (book.size > 0) return false
  for (const side of targets.flatMap((t) => t.topology.sideQueues)) {
    const depth = (await inspectQueue(connection, side.queue))?.messageCount ?? 0
    if (depth > (side.kind === 'capped' ? CAPPED_QUEUE_MAX_LENGTH : 0)) return false
  }
  return true
}

const reached = (s: DlqStatus) => s.depth >= s.baseline + s.added

async function waitForDeadLetters({ connection, targets, book, tally, timeoutMs, pollMs, log }: WaitOptions): Promise<DlqStatus[]> {
  const deadline = Date.now() + timeoutMs
  let lastReport = Date.now()
  for (;;) {
    if (tally.channelErrors.length) throw new SeedError(tally.channelErrors.join('; '))
    const statuses = await dlqStatuses(connection, targets)
    if (statuses.every(reached)) return statuses
    // A drainer (Lazarus itself) keeps a DLQ's depth down; for those queues only the sources can say we are done.
    if (statuses.every((s) => reached(s) || s.consumers > 0) && (await runSettled(connection, targets, book))) return statuses
    if (Date.now() > deadline) throw new SeedError(timeoutMessage(statuses, book, tally, timeoutMs))
    if (Date.now() - lastReport >= 5_000) {
      lastReport = Date.now()
      const arrived = statuses.reduce((sum, s) => sum + Math.max(0, s.depth - s.baseline), 0)
      const expected = statuses.reduce((sum, s) => sum + s.added, 0)
      log(`  waiting: ${arrived}/${expected} dead letters in the DLQs, ${book.size} messages still retrying`)
    }
    await sleep(pollMs)
  }
}

function timeoutMessage(statuses: readonly DlqStatus[], book: PlanBook, tally: Tally, timeoutMs: number): string {
  const queues = statuses.map((s) => `${s.topology.dlq} has ${s.depth - s.baseline} of ${s.added} new`).join(', ')
  const refused = tally.refused ? `; ${tally.refused} copies were refused (is a DLQ full?)` : ''
  return `Timed out after ${Math.round(timeoutMs / 1000)} s waiting for dead letters: ${queues}; ${book.size} messages still retrying${refused}.`
}

// =================================================================================================================
// Running it

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return url
  }
}

async function connect(url: string): Promise<ChannelModel> {
  try {
    const connection = await amqp.connect(url, { timeout: 10_000, clientProperties: { connection_name: 'lazarus demo:seed' } })
    connection.on('error', () => {}) // surfaced by the operation that fails next
    return connection
  } catch (error) {
    const reason = (error as Error).message || String(error)
    const hint = /ACCESS.REFUSED/.test(reason) ? 'Check the user and password in AMQP_URL.' : 'Start the broker or point AMQP_URL at one.'
    throw new SeedError(`Cannot reach RabbitMQ at ${redactUrl(url)} (${reason}). ${hint}`)
  }
}

/** Runs a declaration; a conflict with what exists becomes a SeedError naming `what`. */
async function declaring(what: string, declare: () => Promise<void>): Promise<void> {
  try {
    await declare()
  } catch (error) {
    if (error instanceof TopologyConflictError) throw new SeedError(error.message)
    if ((error as { code?: number }).code === 406) {
      throw new SeedError(`${(error as Error).message}\nA queue of ${what} exists with other settings; use another --prefix or delete it.`)
    }
    throw error
  }
}

async function declareAll(connection: ChannelModel, topologies: readonly AppTopology[], traps: { prefix: string; traps: readonly DemoTrap[] }): Promise<void> {
  for (const topology of topologies) await declaring(topology.exchange, () => declareAppTopology(connection, topology))
  await declaring(`${traps.prefix}.trap.*`, () => declareDemoTraps(connection, traps.traps))
}

function withDefaults(input: Partial<SeedOptions>): SeedOptions {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined))
  return { ...DEFAULT_SEED_OPTIONS, ...defined }
}

/** The demo apps' topologies under `prefix`. */
export function demoTopologies(prefix: string, delays = DEMO_DELAYS): AppTopology[] {
  return DEMO_APPS.map((app) => appTopology(prefix, topologySpec(app), delays))
}

/** Declares the demo topology, publishes, fails every message as planned, and resolves once the DLQs hold them. */
export async function runSeed(input: Partial<SeedOptions> = {}): Promise<SeedResult> {
  const options = withDefaults(input)
  const log = options.log ?? (() => {})
  const started = Date.now()
  const delays = options.fast ? FAST_DELAYS : DEMO_DELAYS
  const topologies = demoTopologies(options.prefix, delays)
  const traps = demoTraps(options.prefix)
  const connection = await connect(options.amqpUrl)
  const consumers: ConsumerHandle[] = []
  const book: PlanBook = new Map()
  const tally: Tally = { discarded: 0, refused: 0, channelErrors: [], replaysSucceeded: 0, replaysFailedAgain: 0 }
  try {
    await declareAll(connection, topologies, { prefix: options.prefix, traps })
    log(`Declared ${topologies.map((t) => t.exchange).join(', ')} (retry delays ${formatDelay(delays.short)} / ${formatDelay(delays.long)})`)
    log(`Declared ${traps.length} deliberate traps for the topology doctor under ${options.prefix}.trap.*`)
    const { publications, targets } = await planRun(connection, topologies, options.count, book)
    for (const topology of topologies) consumers.push(...(await startConsumers(connection, topology, book, tally)))
    await publishAll(connection, publications)
    log(`Published ${publications.length} messages; failing them through the retry tiers...`)
    const timeoutMs = options.timeoutMs ?? (options.fast ? 30_000 : 120_000)
    const statuses = await waitForDeadLetters({ connection, targets, book, tally, timeoutMs, pollMs: options.fast ? 100 : 500, log })
    const jetstream = options.nats
      ? {
          ...(await seedJetStream({ settings: options.nats, prefix: options.prefix, count: Math.round(options.count / 4), timeoutMs, log })),
          lazarusNatsUrl: options.nats.LAZARUS_NATS_URL.map(redactUrl).join(','),
        }
      : null
    return {
      prefix: options.prefix,
      fast: options.fast,
      durationMs: Date.now() - started,
      topologies,
      traps,
      dlqs: statuses.map((s) => ({ queue: s.topology.dlq, depth: s.depth, consumers: s.consumers, added: s.added, breakdown: s.breakdown })),
      lazarusSources: lazarusSources(topologies),
      discardedLeftovers: tally.discarded,
      replaysSucceeded: tally.replaysSucceeded,
      replaysFailedAgain: tally.replaysFailedAgain,
      jetstream,
    }
  } finally {
    await Promise.all(consumers.map((c) => c.stop()))
    await connection.close().catch(() => {})
  }
}

export function formatSummary(result: SeedResult): string {
  const width = Math.max(...result.dlqs.map((d) => d.queue.length))
  const lines = [`Seeded ${result.dlqs.reduce((n, d) => n + d.added, 0)} dead letters in ${(result.durationMs / 1000).toFixed(1)} s:`]
  for (const dlq of result.dlqs) {
    const how = Object.entries(dlq.breakdown)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([label, n]) => `${label} ${n}`)
      .join(', ')
    const drained = dlq.consumers ? ` (${dlq.consumers} consumer(s) draining it)` : ''
    lines.push(`  ${dlq.queue.padEnd(width)}  ${String(dlq.depth).padStart(6)} messages${drained}  +${dlq.added} this run: ${how}`)
  }
  if (result.replaysSucceeded + result.replaysFailedAgain) {
    lines.push(`Handled ${result.replaysSucceeded + result.replaysFailedAgain} replayed messages: ${result.replaysSucceeded} succeeded, ${result.replaysFailedAgain} failed again.`)
  }
  if (result.discardedLeftovers) lines.push(`Discarded ${result.discardedLeftovers} leftover messages of an interrupted earlier run.`)
  if (result.traps.length) {
    lines.push(`Declared ${result.traps.length} deliberate traps under ${result.prefix}.trap.* (argument demo-trap) for the topology doctor: /topology shows one finding of each kind:`)
    lines.push(`  ${result.traps.map((t) => t.kind).join(', ')}`)
  }
  const js = result.jetstream
  if (js?.skipped) lines.push(`JetStream: ${js.skipped}; seeded RabbitMQ only.`)
  else if (js) {
    const how = Object.entries(js.breakdown)
      .filter(([label]) => label !== 'succeeded')
      .map(([label, n]) => `${label} ${n}`)
      .join(', ')
    lines.push(`Seeded ${js.failed} JetStream failures in ${js.stream} (${js.subjects}), consumer ${js.consumer} with max_deliver ${js.maxDeliver}: ${how}; ${js.breakdown.succeeded ?? 0} succeeded.`)
    if (js.discardedLeftovers) lines.push(`Discarded ${js.discardedLeftovers} leftover JetStream messages of an interrupted earlier run.`)
  }
  lines.push('', 'Point Lazarus at the terminal DLQs with:', `LAZARUS_SOURCES=${result.lazarusSources}`)
  if (js && !js.skipped) {
    lines.push(
      'and at NATS with:',
      `LAZARUS_NATS_URL=${js.lazarusNatsUrl}`,
      `then add the JetStream source ${js.stream} (Sources → Add source → JetStream): its failures wait for Lazarus in ${js.advisoryStream}.`,
    )
  }
  return lines.join('\n')
}

// =================================================================================================================
// Command line

const USAGE = `Usage: npm run demo:seed -- [--count N] [--prefix NAME] [--fast] [--timeout SECONDS]

Fills local RabbitMQ with demo dead letters for Lazarus and prints the LAZARUS_SOURCES line. When a NATS server with
JetStream answers, also fails some messages of a demo stream (<PREFIX>_ORDERS on <prefix>.orders.>) for Lazarus'
JetStream capture, and prints the LAZARUS_NATS_URL line and the source to add; otherwise says so in one line.

  --count N          dead letters to produce (default 600; env DEMO_SEED_COUNT); a quarter as many JetStream messages
  --prefix NAME      first part of every queue and exchange name (default demo; env DEMO_SEED_PREFIX)
  --fast             millisecond retry delays instead of 5 s / 30 s, for tests (env DEMO_SEED_FAST=1)
  --timeout SECONDS  give up waiting after this long (default 120, or 30 with --fast; env DEMO_SEED_TIMEOUT)

The broker comes from AMQP_URL (default amqp://guest:guest@127.0.0.1:5672); NATS from LAZARUS_NATS_URL (default
nats://127.0.0.1:4222) and the other LAZARUS_NATS_* settings, as Lazarus reads them.`

function positiveInt(raw: string, what: string, max: number): number {
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > max) throw new SeedError(`${what} must be a whole number from 1 to ${max}, got "${raw}"`)
  return value
}

/**
 * Lazarus' NATS settings from the environment, read as Lazarus reads them (only the LAZARUS_NATS_* variables, so that
 * nothing else of the environment can stop the seed), with the local server when LAZARUS_NATS_URL is unset.
 */
function natsSettings(env: NodeJS.ProcessEnv): JetStreamSeedSettings {
  let config
  try {
    config = parseConfig(Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('LAZARUS_NATS_'))))
  } catch (error) {
    if (error instanceof ConfigError) throw new SeedError(error.message)
    throw error
  }
  return { ...config, LAZARUS_NATS_URL: config.LAZARUS_NATS_URL ?? ['nats://127.0.0.1:4222'] }
}

/** argv wins over env; env over defaults. Returns null when help was asked for. */
export function parseSeedOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Partial<SeedOptions> | null {
  let values
  try {
    ;({ values } = parseArgs({
      args: [...argv],
      options: {
        count: { type: 'string' },
        prefix: { type: 'string' },
        fast: { type: 'boolean' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }))
  } catch (error) {
    throw new SeedError(`${(error as Error).message}\n\n${USAGE}`)
  }
  if (values.help) return null
  const count = values.count ?? env.DEMO_SEED_COUNT
  const prefix = values.prefix ?? env.DEMO_SEED_PREFIX
  const timeout = values.timeout ?? env.DEMO_SEED_TIMEOUT
  if (prefix !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(prefix)) {
    throw new SeedError(`--prefix must be letters, digits, "-" or "_" (it is joined to app names with dots), got "${prefix}"`)
  }
  return {
    amqpUrl: env.AMQP_URL || undefined,
    count: count === undefined ? undefined : positiveInt(count, '--count', 50_000),
    prefix,
    fast: values.fast ?? ['1', 'true'].includes(env.DEMO_SEED_FAST ?? ''),
    timeoutMs: timeout === undefined ? undefined : positiveInt(timeout, '--timeout', 3_600) * 1000,
    nats: natsSettings(env),
  }
}

async function main(): Promise<void> {
  try {
    const options = parseSeedOptions(process.argv.slice(2), process.env)
    if (!options) {
      console.log(USAGE)
      return
    }
    const result = await runSeed({ ...options, log: (line) => console.log(line) })
    console.log(formatSummary(result))
  } catch (error) {
    console.error(error instanceof SeedError ? `demo:seed: ${error.message}` : error)
    process.exitCode = 1
  }
}

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
  } catch {
    return false
  }
}

if (invokedDirectly()) await main()
