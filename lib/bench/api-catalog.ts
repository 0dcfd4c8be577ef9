/**
 * The synthetic world `npm run bench:api` loads: 50 DLQs across 14 services, 50 error groups with Zipf-like
 * sizes, and per-group templates (message, stack, typed headers, properties) that the loader's SQL fills per row.
 *
 * Templates carry placeholders the SQL replaces:
 *   in messages: {int} {small} {hex} {uuid} {ms} {date} {ip} {cur}
 *   in header/property JSON: a JSON string value "@@name@@" becomes a per-row JSON literal, through format()
 *   (toFormat here, the argument order in lib/bench/api-load.ts).
 */
import { createHash } from 'node:crypto'
import { normaliseMessage } from '@/lib/server/ingest/normalise/message-pattern'

export type Language = 'java' | 'dotnet' | 'node' | 'python'
export type FrameworkName = 'spring-amqp' | 'spring-cloud-stream' | 'masstransit' | 'nservicebus' | 'rebus' | 'lazarus' | 'plain-dlx'

type Domain = {
  service: string
  framework: FrameworkName
  language: Language
  entityPrefix: string
  events: string[]
  versions: string[]
}

const DOMAINS: Record<string, Domain> = {
  orders: { service: 'orders-api', framework: 'spring-amqp', language: 'java', entityPrefix: 'order-', events: ['created', 'updated', 'cancelled', 'fulfilment'], versions: ['4.17.2', '4.18.0', '4.18.1'] },
  payments: { service: 'payments-worker', framework: 'masstransit', language: 'dotnet', entityPrefix: 'pay_', events: ['capture', 'refund', 'authorise', 'webhooks'], versions: ['2.9.0', '2.10.0', '2.10.3'] },
  billing: { service: 'billing', framework: 'nservicebus', language: 'dotnet', entityPrefix: 'inv-', events: ['invoices', 'dunning', 'credit-notes', 'tax'], versions: ['7.3.1', '7.4.0'] },
  inventory: { service: 'inventory-sync', framework: 'spring-cloud-stream', language: 'java', entityPrefix: 'sku-', events: ['reservations', 'adjustments', 'snapshots'], versions: ['1.42.0', '1.43.0', '1.43.2'] },
  shipping: { service: 'shipping-gateway', framework: 'lazarus', language: 'node', entityPrefix: 'shp-', events: ['labels', 'tracking', 'pickups', 'returns'], versions: ['3.1.4', '3.2.0', '3.2.1'] },
  notifications: { service: 'notifier', framework: 'lazarus', language: 'node', entityPrefix: 'usr-', events: ['email', 'sms', 'push', 'webhooks'], versions: ['12.0.3', '12.1.0'] },
  jobs: { service: 'jobs-indexer', framework: 'spring-amqp', language: 'java', entityPrefix: 'job-', events: ['postings', 'expiry', 'feeds', 'index'], versions: ['5.6.0', '5.7.0', '5.7.1'] },
  applications: { service: 'applications-api', framework: 'rebus', language: 'dotnet', entityPrefix: 'app-', events: ['submitted', 'screening', 'attachments'], versions: ['1.8.5', '1.9.0'] },
  users: { service: 'identity', framework: 'masstransit', language: 'dotnet', entityPrefix: 'usr-', events: ['signup', 'profile', 'gdpr', 'sessions'], versions: ['6.2.0', '6.2.2', '6.3.0'] },
  search: { service: 'search-indexer', framework: 'lazarus', language: 'python', entityPrefix: 'doc-', events: ['reindex', 'suggest', 'synonyms'], versions: ['0.31.0', '0.32.1'] },
  pricing: { service: 'pricing-engine', framework: 'spring-amqp', language: 'java', entityPrefix: 'quote-', events: ['quotes', 'rules', 'fx'], versions: ['2.3.0', '2.4.0'] },
  catalog: { service: 'catalog-importer', framework: 'lazarus', language: 'node', entityPrefix: 'prod-', events: ['import', 'media', 'translations', 'variants'], versions: ['9.0.1', '9.1.0', '9.1.2'] },
  fraud: { service: 'fraud-scoring', framework: 'lazarus', language: 'python', entityPrefix: 'case-', events: ['scores', 'reviews', 'chargebacks'], versions: ['0.9.4', '1.0.0'] },
  analytics: { service: 'events-pipeline', framework: 'plain-dlx', language: 'node', entityPrefix: 'evt-', events: ['events', 'sessions', 'exports'], versions: ['2026.11.1'] },
}

export type SourceSpec = { idx: number; domain: string; queue: string; exchange: string; dlx: string; routingKey: string; originQueue: string }

/** 50 terminal DLQs, in domain order. */
export const SOURCES: SourceSpec[] = Object.entries(DOMAINS).flatMap(([domain, d]) =>
  d.events.map((event) => ({ domain, queue: `${domain}.${event}.dlq`, exchange: domain, dlx: `${domain}.dlx`, routingKey: `${domain}.${event}`, originQueue: `${domain}.${event}.work` })),
).map((s, i) => ({ ...s, idx: i + 1 }))

/**
 * The role binding of the restricted scenarios: team billing operates `billing.*` (4 of the 50 sources; its groups
 * span up to 3 of them). Resolved to source ids the way a binding's pattern is: by queue name.
 */
export const SCOPED_PATTERN = 'billing.*'
export const scopedQueues = (pattern = SCOPED_PATTERN): string[] => {
  const prefix = pattern.replace(/\*$/, '')
  return SOURCES.filter((s) => (pattern.endsWith('*') ? s.queue.startsWith(prefix) : s.queue === pattern)).map((s) => s.queue)
}

type Kind = 'invalid' | 'transient' | 'exhausted' | 'expired' | 'overflow' | 'delivery-limit'

type RawGroup = {
  domain: string
  type: string | null
  message: string | null
  kind: Kind
  /** In-app frames, throw site first (ignored for plain DLX groups). */
  frames: string[]
  messageType: string
  reason?: 'rejected' | 'expired' | 'maxlen' | 'delivery_limit'
  attempts?: number
}

// Ranked by size: rank 1 is the largest. Messages are what the services really print, parameterised.
const RAW_GROUPS: RawGroup[] = [
  { domain: 'orders', type: 'java.net.SocketTimeoutException', message: 'Read timed out calling inventory-service at http://inventory-service:8080/api/v2/reservations/{uuid} after {ms} ms', kind: 'transient', frames: ['com.acme.orders.inventory.InventoryClient.reserve', 'com.acme.orders.fulfilment.ReservationService.reserveLines', 'com.acme.orders.listener.OrderCreatedListener.onOrderCreated'], messageType: 'OrderCreated', attempts: 4 },
  { domain: 'payments', type: 'Acme.Payments.Gateway.CardDeclinedException', message: 'Card declined by issuer: insufficient_funds (authorisation {hex})', kind: 'invalid', frames: ['Acme.Payments.Gateway.StripeGateway.CaptureAsync(CaptureRequest request, CancellationToken ct)', 'Acme.Payments.Consumers.CapturePaymentConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Payments.Contracts:CapturePayment', attempts: 1 },
  { domain: 'jobs', type: 'com.acme.jobs.feed.FeedValidationException', message: "Job posting {int} rejected: field 'salary.max' must be greater than or equal to 'salary.min'", kind: 'invalid', frames: ['com.acme.jobs.feed.PostingValidator.validateSalary', 'com.acme.jobs.feed.PostingValidator.validate', 'com.acme.jobs.listener.FeedImportListener.onPosting'], messageType: 'JobPostingImported', attempts: 1 },
  { domain: 'notifications', type: 'SmtpError', message: '421 4.7.0 Temporary System Problem. Try again later (mx{small}.mail.example.net)', kind: 'transient', frames: ['SMTPConnection._formatError|src/mail/smtp-connection.js', 'sendEmail|src/channels/email.js', 'handleEmailRequested|src/handlers/email-requested.js'], messageType: 'EmailRequested', attempts: 5 },
  { domain: 'billing', type: 'Microsoft.Data.SqlClient.SqlException', message: 'Transaction (Process ID {small}) was deadlocked on lock resources with another process and has been chosen as the deadlock victim. Rerun the transaction.', kind: 'exhausted', frames: ['Acme.Billing.Invoices.InvoiceRepository.SaveAsync(Invoice invoice, CancellationToken ct)', 'Acme.Billing.Invoices.IssueInvoiceHandler.Handle(IssueInvoice message, IMessageHandlerContext context)'], messageType: 'Acme.Billing.Messages.IssueInvoice', attempts: 6 },
  { domain: 'inventory', type: 'org.springframework.orm.ObjectOptimisticLockingFailureException', message: 'Row was updated or deleted by another transaction (or unsaved-value mapping was incorrect) : [com.acme.inventory.domain.StockLevel#{int}]', kind: 'exhausted', frames: ['com.acme.inventory.stock.StockLevelService.adjust', 'com.acme.inventory.stream.AdjustmentConsumer.accept'], messageType: 'StockAdjusted', attempts: 3 },
  { domain: 'shipping', type: 'AxiosError', message: 'timeout of 10000ms exceeded (POST https://api.carrier.example/v1/labels)', kind: 'transient', frames: ['createLabel|src/carriers/dhl.js', 'purchaseLabel|src/labels/purchase.js', 'onLabelRequested|src/handlers/label-requested.js'], messageType: 'LabelRequested', attempts: 5 },
  { domain: 'analytics', type: null, message: null, kind: 'expired', frames: [], messageType: 'PageViewed', reason: 'expired', attempts: 1 },
  { domain: 'orders', type: 'com.fasterxml.jackson.databind.exc.InvalidFormatException', message: 'Cannot deserialize value of type `java.time.OffsetDateTime` from String "{date}": Failed to deserialize java.time.OffsetDateTime', kind: 'invalid', frames: ['com.acme.orders.listener.OrderUpdatedListener.onOrderUpdated'], messageType: 'OrderUpdated', attempts: 1 },
  { domain: 'payments', type: 'System.Net.Http.HttpRequestException', message: 'Response status code does not indicate success: 503 (Service Unavailable).', kind: 'transient', frames: ['Acme.Payments.Refunds.AdyenClient.RefundAsync(RefundRequest request, CancellationToken ct)', 'Acme.Payments.Consumers.RefundPaymentConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Payments.Contracts:RefundPayment', attempts: 5 },
  { domain: 'search', type: 'elasticsearch.exceptions.ConnectionTimeout', message: "ConnectionTimeout caused by - ReadTimeoutError(HTTPConnectionPool(host='es-data-{small}', port=9200): Read timed out. (read timeout=30))", kind: 'transient', frames: ['search_indexer.bulk.flush', 'search_indexer.handlers.reindex_document'], messageType: 'DocumentChanged', attempts: 4 },
  { domain: 'users', type: 'System.ArgumentNullException', message: "Value cannot be null. (Parameter 'email')", kind: 'invalid', frames: ['Acme.Identity.Accounts.AccountFactory.Create(SignupRequested request)', 'Acme.Identity.Consumers.SignupConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Identity.Contracts:SignupRequested', attempts: 1 },
  { domain: 'catalog', type: 'ValidationError', message: '"price" must be a positive number at /variants/{small}/price', kind: 'invalid', frames: ['validateVariant|src/import/validate.js', 'importProduct|src/import/product.js', 'onProductImported|src/handlers/product-imported.js'], messageType: 'ProductImported', attempts: 1 },
  { domain: 'applications', type: 'System.IO.IOException', message: 'Unable to read data from the transport connection: Connection reset by peer.', kind: 'transient', frames: ['Acme.Applications.Storage.BlobStore.UploadAsync(Stream content, String path)', 'Acme.Applications.Handlers.StoreAttachmentHandler.Handle(AttachmentReceived message)'], messageType: 'Acme.Applications.Messages.AttachmentReceived, Acme.Applications.Messages', attempts: 5 },
  { domain: 'fraud', type: 'KeyError', message: "'device_fingerprint'", kind: 'invalid', frames: ['fraud_scoring.features.extract_device', 'fraud_scoring.handlers.score_payment'], messageType: 'PaymentAuthorised', attempts: 1 },
  { domain: 'pricing', type: 'java.lang.ArithmeticException', message: 'Non-terminating decimal expansion; no exact representable decimal result.', kind: 'exhausted', frames: ['com.acme.pricing.tax.VatCalculator.split', 'com.acme.pricing.quote.QuoteService.price', 'com.acme.pricing.listener.QuoteRequestedListener.onQuote'], messageType: 'QuoteRequested', attempts: 3 },
  { domain: 'jobs', type: 'org.postgresql.util.PSQLException', message: 'ERROR: duplicate key value violates unique constraint "job_postings_external_id_key"\n  Detail: Key (external_id)=({hex}) already exists.', kind: 'invalid', frames: ['com.acme.jobs.store.PostingRepository.insert', 'com.acme.jobs.listener.FeedImportListener.onPosting'], messageType: 'JobPostingImported', attempts: 1 },
  { domain: 'notifications', type: 'FirebaseMessagingError', message: 'Requested entity was not found. (registration token {hex}…)', kind: 'invalid', frames: ['sendPush|src/channels/push.js', 'handlePushRequested|src/handlers/push-requested.js'], messageType: 'PushRequested', attempts: 1 },
  { domain: 'billing', type: 'Acme.Billing.Tax.TaxServiceUnavailableException', message: 'Tax provider returned 429 Too Many Requests; retry after {small} s', kind: 'transient', frames: ['Acme.Billing.Tax.TaxClient.QuoteAsync(TaxQuoteRequest request)', 'Acme.Billing.Tax.CalculateTaxHandler.Handle(CalculateTax message, IMessageHandlerContext context)'], messageType: 'Acme.Billing.Messages.CalculateTax', attempts: 6 },
  { domain: 'analytics', type: null, message: null, kind: 'overflow', frames: [], messageType: 'SessionEnded', reason: 'maxlen', attempts: 1 },
  { domain: 'orders', type: 'java.lang.NullPointerException', message: 'Cannot invoke "com.acme.orders.domain.Address.getCountry()" because "shipping" is null', kind: 'exhausted', frames: ['com.acme.orders.shipping.ShippingRules.zoneFor', 'com.acme.orders.fulfilment.FulfilmentPlanner.plan', 'com.acme.orders.listener.FulfilmentListener.onFulfilment'], messageType: 'FulfilmentRequested', attempts: 4 },
  { domain: 'shipping', type: 'CarrierApiError', message: 'DHL API 400: Postal code {int} is not valid for country DE', kind: 'invalid', frames: ['createLabel|src/carriers/dhl.js', 'purchaseLabel|src/labels/purchase.js'], messageType: 'LabelRequested', attempts: 1 },
  { domain: 'payments', type: 'Acme.Payments.IdempotencyConflictException', message: 'Payment {uuid} already captured with a different amount', kind: 'invalid', frames: ['Acme.Payments.Capture.IdempotencyGuard.Check(Guid paymentId, Money amount)', 'Acme.Payments.Consumers.CapturePaymentConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Payments.Contracts:CapturePayment', attempts: 1 },
  { domain: 'inventory', type: 'org.springframework.messaging.converter.MessageConversionException', message: 'Cannot convert from [[B] to [com.acme.inventory.events.SnapshotTaken] for GenericMessage [payload=byte[{int}]]', kind: 'invalid', frames: ['com.acme.inventory.stream.SnapshotConsumer.accept'], messageType: 'SnapshotTaken', attempts: 1 },
  { domain: 'users', type: 'System.TimeoutException', message: 'Timeout during reading attempt (Npgsql command timeout {small} s)', kind: 'transient', frames: ['Acme.Identity.Profiles.ProfileStore.UpdateAsync(Profile profile)', 'Acme.Identity.Consumers.ProfileChangedConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Identity.Contracts:ProfileChanged', attempts: 5 },
  { domain: 'jobs', type: null, message: null, kind: 'delivery-limit', frames: [], messageType: 'JobExpired', reason: 'delivery_limit', attempts: 20 },
  { domain: 'catalog', type: 'Error', message: "ENOSPC: no space left on device, write '/tmp/media/{hex}.jpg'", kind: 'exhausted', frames: ['writeThumbnail|src/media/thumbnails.js', 'onMediaUploaded|src/handlers/media-uploaded.js'], messageType: 'MediaUploaded', attempts: 3 },
  { domain: 'fraud', type: 'requests.exceptions.ReadTimeout', message: "HTTPSConnectionPool(host='scoring.internal', port=443): Read timed out. (read timeout=5)", kind: 'transient', frames: ['fraud_scoring.model_client.predict', 'fraud_scoring.handlers.score_payment'], messageType: 'PaymentAuthorised', attempts: 4 },
  { domain: 'pricing', type: 'com.acme.pricing.fx.RateNotFoundException', message: 'No FX rate for {cur}->EUR on {date}', kind: 'invalid', frames: ['com.acme.pricing.fx.FxRates.rate', 'com.acme.pricing.listener.FxUpdatedListener.onFx'], messageType: 'FxRatesPublished', attempts: 1 },
  { domain: 'applications', type: 'Acme.Applications.Screening.VirusDetectedException', message: 'Attachment {uuid} flagged by scanner: Win.Test.EICAR_HDB-1', kind: 'invalid', frames: ['Acme.Applications.Screening.AttachmentScanner.ScanAsync(Guid attachmentId)', 'Acme.Applications.Handlers.ScreenApplicationHandler.Handle(ApplicationSubmitted message)'], messageType: 'Acme.Applications.Messages.ApplicationSubmitted, Acme.Applications.Messages', attempts: 1 },
  { domain: 'search', type: 'ValueError', message: "Invalid synonym rule at line {small}: 'tv, television =>'", kind: 'invalid', frames: ['search_indexer.synonyms.parse_rule', 'search_indexer.handlers.update_synonyms'], messageType: 'SynonymsChanged', attempts: 1 },
  { domain: 'billing', type: 'System.InvalidOperationException', message: 'Sequence contains no elements', kind: 'exhausted', frames: ['Acme.Billing.Dunning.DunningPolicy.NextStep(Invoice invoice)', 'Acme.Billing.Dunning.RunDunningHandler.Handle(RunDunning message, IMessageHandlerContext context)'], messageType: 'Acme.Billing.Messages.RunDunning', attempts: 6 },
  { domain: 'orders', type: 'org.springframework.web.client.HttpServerErrorException$GatewayTimeout', message: '504 Gateway Timeout: "upstream request timeout"', kind: 'transient', frames: ['com.acme.orders.pricing.PricingClient.quote', 'com.acme.orders.listener.OrderCreatedListener.onOrderCreated'], messageType: 'OrderCreated', attempts: 4 },
  { domain: 'notifications', type: 'RestException', message: "Unable to create record: The 'To' number +4915{int} is not a valid phone number.", kind: 'invalid', frames: ['sendSms|src/channels/sms.js', 'handleSmsRequested|src/handlers/sms-requested.js'], messageType: 'SmsRequested', attempts: 1 },
  { domain: 'shipping', type: 'TypeError', message: "Cannot read properties of undefined (reading 'trackingNumber')", kind: 'exhausted', frames: ['mapTrackingEvent|src/tracking/map.js', 'onTrackingUpdated|src/handlers/tracking-updated.js'], messageType: 'TrackingUpdated', attempts: 3 },
  { domain: 'payments', type: 'Acme.Payments.Risk.FraudHoldException', message: 'Payment held for manual review (case {int})', kind: 'invalid', frames: ['Acme.Payments.Risk.RiskGate.Enforce(Payment payment)', 'Acme.Payments.Consumers.AuthorisePaymentConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Payments.Contracts:AuthorisePayment', attempts: 1 },
  { domain: 'inventory', type: 'java.util.concurrent.TimeoutException', message: 'Timeout waiting for lock stock:{int} after 5000 ms', kind: 'transient', frames: ['com.acme.inventory.locks.StockLock.acquire', 'com.acme.inventory.stock.ReservationService.reserve', 'com.acme.inventory.stream.ReservationConsumer.accept'], messageType: 'StockReserved', attempts: 3 },
  { domain: 'users', type: 'Acme.Identity.Gdpr.ErasureRefusedException', message: 'Subject {uuid} has an open legal hold; erasure refused', kind: 'invalid', frames: ['Acme.Identity.Gdpr.ErasureService.EraseAsync(Guid subjectId)', 'Acme.Identity.Consumers.ErasureRequestedConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Identity.Contracts:ErasureRequested', attempts: 1 },
  { domain: 'catalog', type: 'SyntaxError', message: 'Unexpected token < in JSON at position 0', kind: 'invalid', frames: ['fetchTranslations|src/translations/client.js', 'onTranslationRequested|src/handlers/translation-requested.js'], messageType: 'TranslationRequested', attempts: 1 },
  { domain: 'analytics', type: null, message: null, kind: 'expired', frames: [], messageType: 'ExportRequested', reason: 'expired', attempts: 1 },
  { domain: 'jobs', type: 'com.acme.jobs.geo.GeocodingException', message: 'Geocoder quota exceeded for API key ending {hex}', kind: 'transient', frames: ['com.acme.jobs.geo.Geocoder.locate', 'com.acme.jobs.index.PostingIndexer.index', 'com.acme.jobs.listener.IndexListener.onIndex'], messageType: 'JobPostingChanged', attempts: 4 },
  { domain: 'fraud', type: 'psycopg2.OperationalError', message: 'server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally before or while processing the request.', kind: 'transient', frames: ['fraud_scoring.store.save_case', 'fraud_scoring.handlers.open_review'], messageType: 'ReviewOpened', attempts: 4 },
  { domain: 'pricing', type: 'java.lang.IllegalStateException', message: 'Rule set {int} is not active', kind: 'exhausted', frames: ['com.acme.pricing.rules.RuleSetRegistry.active', 'com.acme.pricing.listener.RulesChangedListener.onRules'], messageType: 'PricingRulesChanged', attempts: 3 },
  { domain: 'applications', type: 'System.Text.Json.JsonException', message: 'The JSON value could not be converted to System.DateTime. Path: $.submittedAt | LineNumber: 0 | BytePositionInLine: {small}.', kind: 'invalid', frames: ['Acme.Applications.Handlers.ApplicationSubmittedHandler.Handle(ApplicationSubmitted message)'], messageType: 'Acme.Applications.Messages.ApplicationSubmitted, Acme.Applications.Messages', attempts: 1 },
  // The long tail: rare failures an operator still has to find.
  { domain: 'billing', type: 'Acme.Billing.CurrencyMismatchException', message: 'Invoice {int} currency CHF does not match account currency EUR', kind: 'invalid', frames: ['Acme.Billing.Credit.CreditNoteService.Issue(Invoice invoice, Money amount)', 'Acme.Billing.Credit.IssueCreditNoteHandler.Handle(IssueCreditNote message, IMessageHandlerContext context)'], messageType: 'Acme.Billing.Messages.IssueCreditNote', attempts: 1 },
  { domain: 'orders', type: 'java.lang.OutOfMemoryError', message: 'Java heap space', kind: 'exhausted', frames: ['com.acme.orders.export.InvoiceArchive.zip', 'com.acme.orders.listener.OrderCancelledListener.onCancelled'], messageType: 'OrderCancelled', attempts: 4 },
  { domain: 'search', type: 'UnicodeDecodeError', message: "'utf-8' codec can't decode byte 0xe9 in position {small}: invalid continuation byte", kind: 'invalid', frames: ['search_indexer.suggest.load_terms', 'search_indexer.handlers.rebuild_suggestions'], messageType: 'SuggestionsRequested', attempts: 1 },
  { domain: 'notifications', type: 'RangeError', message: 'Maximum call stack size exceeded', kind: 'exhausted', frames: ['renderTemplate|src/templates/render.js', 'handleWebhookRequested|src/handlers/webhook-requested.js'], messageType: 'WebhookRequested', attempts: 5 },
  { domain: 'users', type: 'System.Security.Cryptography.CryptographicException', message: 'Padding is invalid and cannot be removed.', kind: 'invalid', frames: ['Acme.Identity.Sessions.TokenProtector.Unprotect(String token)', 'Acme.Identity.Consumers.SessionRevokedConsumer.Consume(ConsumeContext`1 context)'], messageType: 'Acme.Identity.Contracts:SessionRevoked', attempts: 1 },
  { domain: 'shipping', type: 'Error', message: 'Label PDF exceeds 4 MB (got {int} bytes)', kind: 'invalid', frames: ['storeLabel|src/labels/store.js', 'onReturnRequested|src/handlers/return-requested.js'], messageType: 'ReturnRequested', attempts: 1 },
]

/** Rows per million for the six tail groups (ranks 45–50); ranks 1–44 share the rest Zipf-like (s = 1.18, the largest ~30%). */
const TAIL_PER_MILLION = [2000, 600, 200, 60, 20, 5]
const ZIPF_S = 1.18

export type GroupSpec = {
  rank: number
  domain: string
  service: string
  framework: FrameworkName
  errorType: string | null
  messageTemplate: string | null
  messagePattern: string | null
  title: string
  signature: string
  kind: Kind
  reason: string
  attempts: number
  rows: number
  sourceIdx: number[]
  versions: string[]
  entityPrefix: string
  messageType: string
  /** The stack is stackHead || <per-row message> || stackTail (null for groups without an error). */
  stackHead: string | null
  stackTail: string | null
  headersTemplate: string
  xDeathTemplate: string
  propertiesTemplate: string
  /** Arrivals: uniform over [startDaysAgo, endDaysAgo] plus a share in one burst. */
  startDaysAgo: number
  endDaysAgo: number
  burstShare: number
  burstDaysAgo: number
  burstHours: number
  status: 'open' | 'acknowledged' | 'muted' | 'resolved'
  note: string | null
  ticketUrl: string | null
}

/** Deterministic PRNG (mulberry32) so every run builds the same world. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Exact row counts per rank that add up to `total` (largest remainder). */
export function groupSizes(total: number): number[] {
  const tail = TAIL_PER_MILLION.map((perMillion) => (perMillion * total) / 1_000_000)
  const zipfShare = 1 - tail.reduce((a, b) => a + b, 0) / total
  const weights = Array.from({ length: RAW_GROUPS.length - TAIL_PER_MILLION.length }, (_, k) => (k + 1) ** -ZIPF_S)
  const sum = weights.reduce((a, b) => a + b, 0)
  const exact = [...weights.map((w) => (w / sum) * zipfShare * total), ...tail]
  const sizes = exact.map((x) => Math.max(1, Math.floor(x)))
  let missing = total - sizes.reduce((a, b) => a + b, 0)
  const byRemainder = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r)
  for (let j = 0; missing > 0; j = (j + 1) % byRemainder.length, missing--) sizes[byRemainder[j].i]++
  for (let i = 0; missing < 0; i = (i + 1) % 44) {
    if (sizes[i] > 1) {
      sizes[i]--
      missing++
    }
  }
  return sizes
}

const SAMPLE_VALUES: Record<string, string> = {
  '{int}': '48213', '{small}': '7', '{hex}': '9f3a61c07be2', '{uuid}': '3f1e9a52-7c4b-4d2e-9a10-5b6c7d8e9f01',
  '{ms}': '30000', '{date}': '2026-11-31T25:61:00+01:00', '{ip}': '10.42.7.19', '{cur}': 'GBP',
}

const fileLine = (name: string, n: number) => 20 + (createHash('md5').update(name).digest()[n % 16] % 200)

function javaStack(type: string, frames: string[], framework: FrameworkName): [string, string] {
  const at = (fn: string, i: number) => {
    const cls = fn.split('.').slice(-2, -1)[0]
    return `\tat ${fn}(${cls}.java:${fileLine(fn, i)})`
  }
  const tail = framework === 'spring-cloud-stream'
    ? ['\tat org.springframework.cloud.function.context.catalog.SimpleFunctionRegistry$FunctionInvocationWrapper.invokeConsumer(SimpleFunctionRegistry.java:1034)', '\tat org.springframework.integration.handler.AbstractMessageHandler.handleMessage(AbstractMessageHandler.java:105)', '\tat org.springframework.integration.amqp.inbound.AmqpInboundChannelAdapter$Listener.onMessage(AmqpInboundChannelAdapter.java:389)']
    : ['\tat java.base/jdk.internal.reflect.DirectMethodHandleAccessor.invoke(DirectMethodHandleAccessor.java:103)', '\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)', '\tat org.springframework.messaging.handler.invocation.InvocableHandlerMethod.doInvoke(InvocableHandlerMethod.java:169)', '\tat org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter.invokeHandler(MessagingMessageListenerAdapter.java:277)', '\tat org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer.doReceiveAndExecute(SimpleMessageListenerContainer.java:1085)', '\tat org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer$AsyncMessageProcessingConsumer.run(SimpleMessageListenerContainer.java:1281)', '\tat java.base/java.lang.Thread.run(Thread.java:1583)']
  return [`${type}: `, `\n${[...frames.map(at), ...tail].join('\n')}`]
}

function dotnetStack(type: string, frames: string[], framework: FrameworkName): [string, string] {
  const at = (fn: string, i: number) => {
    const parts = fn.split('(')[0].split('.')
    return `   at ${fn} in /src/${parts.slice(0, 2).join('.')}/${parts.slice(2, -1).join('/')}.cs:line ${fileLine(fn, i)}`
  }
  const tail = {
    masstransit: ['--- End of stack trace from previous location ---', '   at MassTransit.Middleware.MethodConsumerMessageFilter`2.MassTransit.IFilter<MassTransit.ConsumerConsumeContext<TConsumer,TMessage>>.Send(ConsumerConsumeContext`2 context, IPipe`1 next)'],
    nservicebus: ['   at NServiceBus.InvokeHandlerTerminator.Terminate(IInvokeHandlerContext context) in /_/src/NServiceBus.Core/Pipeline/Incoming/InvokeHandlerTerminator.cs:line 33', '   at NServiceBus.LoadHandlersConnector.Invoke(IIncomingLogicalMessageContext context, Func`2 stage) in /_/src/NServiceBus.Core/Pipeline/Incoming/LoadHandlersConnector.cs:line 49', '   at NServiceBus.Transport.RabbitMQ.MessagePump.Process(AsyncEventingBasicConsumer consumer, BasicDeliverEventArgs message, CancellationToken messageProcessingCancellationToken) in /_/src/NServiceBus.Transport.RabbitMQ/Receiving/MessagePump.cs:line 482'],
    rebus: ['   at Rebus.Pipeline.Receive.DispatchIncomingMessageStep.Process(IncomingStepContext context, Func`1 next) in /_/Rebus/Pipeline/Receive/DispatchIncomingMessageStep.cs:line 61', '   at Rebus.Retry.Simple.DefaultRetryStep.Process(IncomingStepContext context, Func`1 next) in /_/Rebus/Retry/Simple/DefaultRetryStep.cs:line 104'],
  }[framework as 'masstransit' | 'nservicebus' | 'rebus'] ?? []
  return [`${type}: `, `\n${[...frames.map(at), ...tail].join('\n')}`]
}

function nodeStack(type: string, frames: string[]): [string, string] {
  const at = (f: string, i: number) => {
    const [fn, file] = f.split('|')
    return `    at ${fn} (/app/${file}:${fileLine(f, i)}:${(fileLine(f, i + 3) % 40) + 1})`
  }
  const tail = ['    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)', '    at async Consumer.dispatch (/app/node_modules/@acme/amqp-worker/dist/consumer.js:141:7)']
  return [`${type}: `, `\n${[...frames.map(at), ...tail].join('\n')}`]
}

function pythonStack(type: string, frames: string[]): [string, string] {
  // Python prints the outermost call first and the exception last.
  const file = (fn: string, i: number) => {
    const parts = fn.split('.')
    return `  File "/app/${parts.slice(0, -1).join('/')}.py", line ${fileLine(fn, i)}, in ${parts.at(-1)}\n    ${parts.at(-1)}_result = _call(payload)`
  }
  const lines = ['Traceback (most recent call last):', '  File "/usr/local/lib/python3.12/site-packages/kombu/messaging.py", line 656, in _receive_callback\n    return on_m(message) if on_m else self.receive(decoded, message)', ...[...frames].reverse().map(file)]
  return [`${lines.join('\n')}\n${type}: `, '']
}

/** A JSON string slot the loader fills with a per-row JSON literal. */
const slot = (name: string) => `@@${name}@@`

/**
 * A JSON template as a format() string taking one JSON literal per name in `order`: one pass per row instead of
 * one replace() per slot.
 */
export function toFormat(template: string, order: readonly string[]): string {
  return template.replaceAll('%', '%%').replace(/"@@([a-z_]+)@@"/g, (_, name: string) => {
    const position = order.indexOf(name)
    if (position < 0) throw new Error(`template slot ${name} has no argument`)
    return `%${position + 1}$s`
  })
}

const S = (v: string) => ({ t: 'S', v })

/** The broker's x-death table (one entry: the work queue the consumer rejected from, or where the TTL/limit hit). */
function xDeathTemplate(reason: string): string {
  return JSON.stringify({
    t: 'A',
    v: [{ t: 'F', v: { count: { t: 'l', v: slot('attempts_str') }, reason: S(reason), queue: S(slot('origin_queue')), time: { t: 'T', v: slot('failed_epoch_str') }, exchange: S(slot('exchange')), 'routing-keys': { t: 'A', v: [S(slot('routing_key'))] } } }],
  })
}

/** Typed headers (lib/server/platform/broker/typed-fields.ts) as each framework leaves them; x-death as the broker writes it. */
function headersTemplate(g: RawGroup, d: Domain, reason: string): string {
  // The row's own source fills these: a group can fail in several queues.
  const source = { exchange: slot('exchange'), originQueue: slot('origin_queue'), routingKey: slot('routing_key'), domain: g.domain }
  const broker = {
    'x-first-death-exchange': S(source.exchange),
    'x-first-death-queue': S(source.originQueue),
    'x-first-death-reason': S(reason),
    'x-last-death-exchange': S(source.exchange),
    'x-last-death-queue': S(source.originQueue),
    'x-last-death-reason': S(reason),
    'x-death': slot('x_death'),
    // The publishing application's own header, which every framework carries over to the failed copy: the tenant
    // the message belongs to (skewed: one large customer, a long tail; TENANT_* below).
    tenant: S(slot('tenant')),
  }
  const type = g.type ?? ''
  switch (d.framework) {
    case 'spring-amqp':
    case 'spring-cloud-stream':
      return JSON.stringify({
        'x-exception-stacktrace': S(slot('stack')), 'x-exception-message': S(slot('message')),
        'x-original-exchange': S(source.exchange), 'x-original-routingKey': S(source.routingKey),
        'retry-count': { t: 'l', v: slot('retries_str') }, __TypeId__: S(`com.acme.${source.domain}.events.${g.messageType}`), ...broker,
      })
    case 'masstransit':
      return JSON.stringify({
        'MT-Reason': S('fault'), 'MT-Fault-ExceptionType': S(type), 'MT-Fault-Message': S(slot('message')), 'MT-Fault-StackTrace': S(slot('stack')),
        'MT-Fault-Timestamp': S(slot('failed_iso')), 'MT-Fault-InputAddress': S(`rabbitmq://rabbit/${source.originQueue}`),
        'MT-Fault-MessageType': S(`urn:message:${g.messageType}`), 'MT-Fault-RetryCount': { t: 'I', v: slot('retries') },
        'MT-Host-MachineName': S(slot('host')), 'MT-Host-ProcessName': S(d.service), 'MT-Host-Assembly': S(d.service),
        'MT-Host-AssemblyVersion': S(slot('version')), 'MT-Host-MassTransitVersion': S('8.5.8.0'), ...broker,
      })
    case 'nservicebus':
      return JSON.stringify({
        'NServiceBus.ExceptionInfo.ExceptionType': S(type), 'NServiceBus.ExceptionInfo.Message': S(slot('message')),
        'NServiceBus.ExceptionInfo.Source': S(d.service), 'NServiceBus.ExceptionInfo.StackTrace': S(slot('stack')),
        'NServiceBus.FailedQ': S(source.originQueue), 'NServiceBus.TimeOfFailure': S(slot('failed_iso')),
        'NServiceBus.ProcessingEndpoint': S(d.service), 'NServiceBus.ProcessingMachine': S(slot('host')),
        'NServiceBus.EnclosedMessageTypes': S(g.messageType), 'NServiceBus.Version': S(slot('version')), ...broker,
      })
    case 'rebus':
      return JSON.stringify({
        'rbs2-error-details': S(slot('stack')), 'rbs2-source-queue': S(source.originQueue), 'rbs2-msg-type': S(g.messageType),
        'rbs2-msg-id': S(slot('message_id')), 'rbs2-sent-time': S(slot('failed_iso')), ...broker,
      })
    case 'lazarus':
      return JSON.stringify({
        'x-error-type': S(type), 'x-error-message': S(slot('message')), 'x-error-stack': S(slot('stack')),
        'x-failure-kind': S(slot('failure_kind')), 'x-service': S(d.service), 'x-service-version': S(slot('version')),
        'x-request-id': S(slot('uuid')), ...broker,
      })
    case 'plain-dlx':
      return JSON.stringify({ 'x-event-schema': { t: 'I', v: 3 }, ...broker })
  }
}

function propertiesTemplate(g: RawGroup, d: Domain): string {
  return JSON.stringify({
    contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2, priority: 0,
    correlationId: slot('correlation_id'), messageId: slot('message_id'), timestamp: slot('sent_epoch'),
    type: g.messageType, appId: d.service,
  })
}

/** The 50 groups, largest first, with sizes for `totalRows` and the source indexes each group fails in. */
export function buildGroups(totalRows: number): GroupSpec[] {
  const sizes = groupSizes(totalRows)
  const random = prng(20261130)
  return RAW_GROUPS.map((g, i): GroupSpec => {
    const rank = i + 1
    const d = DOMAINS[g.domain]
    const domainSources = SOURCES.filter((s) => s.domain === g.domain)
    // A group without error metadata is keyed by its queue (error-signature.ts), so it lives in one source.
    const spread = d.framework === 'plain-dlx' ? 1 : rank <= 5 ? 3 : rank <= 20 ? 2 : 1
    const offset = Math.floor(random() * domainSources.length)
    const sourceIdx = Array.from({ length: Math.min(spread, domainSources.length) }, (_, k) => domainSources[(offset + k) % domainSources.length].idx)
    const reason = g.reason ?? 'rejected'
    const sample = g.message
    const sampleMessage = sample ? Object.entries(SAMPLE_VALUES).reduce((m, [k, v]) => m.replaceAll(k, v), sample) : null
    const messagePattern = normaliseMessage(sampleMessage)
    const shortType = g.type?.split(/[.+]/).pop() ?? null
    const firstSource = SOURCES[sourceIdx[0] - 1]
    const title = shortType
      ? `${shortType}: ${messagePattern}`.slice(0, 120)
      : `no error metadata: ${reason} in ${firstSource.originQueue} (${g.messageType})`
    const frameNames = g.frames.map((f) => f.split('|')[0])
    const signature = `v1:${createHash('sha256').update([g.type ?? '<no error metadata>', ...frameNames, firstSource.originQueue, g.messageType].join('\n')).digest('hex').slice(0, 16)}`
    const [stackHead, stackTail] = !g.type
      ? [null, null]
      : d.language === 'java' ? javaStack(g.type, g.frames, d.framework)
        : d.language === 'dotnet' ? dotnetStack(g.type, g.frames, d.framework)
          : d.language === 'python' ? pythonStack(g.type, g.frames)
            : nodeStack(g.type, g.frames)
    // Most groups fail over the whole month; some began with a deploy, a few were fixed, most have one incident.
    const startDaysAgo = rank <= 6 || random() < 0.5 ? 30 : 2 + random() * 25
    const endDaysAgo = rank === 29 || rank === 40 ? 3 + random() * 4 : rank > 10 && random() < 0.15 ? random() * 2 : 0
    const newVersionOnly = startDaysAgo < 30 && random() < 0.5
    return {
      rank, domain: g.domain, service: d.service, framework: d.framework,
      errorType: g.type, messageTemplate: g.message, messagePattern, title, signature,
      kind: g.kind, reason, attempts: g.attempts ?? 1, rows: sizes[i], sourceIdx,
      versions: newVersionOnly ? d.versions.slice(-1) : d.versions,
      entityPrefix: d.entityPrefix, messageType: g.messageType, stackHead, stackTail,
      headersTemplate: headersTemplate(g, d, reason), xDeathTemplate: xDeathTemplate(reason),
      propertiesTemplate: propertiesTemplate(g, d),
      startDaysAgo, endDaysAgo: Math.min(endDaysAgo, startDaysAgo - 1),
      burstShare: random() < 0.6 ? 0.1 + random() * 0.4 : 0,
      burstDaysAgo: Math.min(startDaysAgo, endDaysAgo + random() * (startDaysAgo - endDaysAgo)),
      burstHours: 1 + random() * 6,
      status: rank === 29 ? 'resolved' : rank === 3 || rank === 9 ? 'acknowledged' : rank === 17 ? 'muted' : 'open',
      note: rank === 3 ? 'Feed partner sends salary ranges inverted; ticket with partner success' : rank === 17 ? 'Known duplicate imports, harmless' : null,
      ticketUrl: rank === 3 || rank === 29 ? `https://tickets.example.com/OPS-${4100 + rank}` : null,
    }
  })
}

/** Words for the free-text part of bodies (notes, comments) so search terms hit varied text. */
export const WORDS = `customer requested delivery before the weekend please leave the parcel with a neighbour if nobody answers
invoice address differs from shipping address gift wrapping requested include a handwritten card express shipping upgrade
promised by support agent follow up on the missing item from the previous order contract renewal pending legal review
candidate uploaded a new resume after the interview schedule changed remote position open to applicants across europe
warehouse reported damaged packaging on arrival stock count corrected after the quarterly audit supplier delayed the
container by three days price match granted against a competitor listing loyalty points applied twice rollback needed
subscription paused during parental leave tax exemption certificate attached for the reseller account payment plan split
into four instalments refund issued to the original card partial shipment sent from the secondary warehouse hazardous goods
surcharge applies for lithium batteries customs declaration missing the harmonised code translation for the product title
is pending review marketing consent withdrawn by the customer address validated against the postal service database store
pickup selected at checkout the courier could not access the building gate code changed last week fragile items packed
separately recurring order every second monday backorder expected next month seasonal promotion ends on sunday evening`.split(/\s+/)

/**
 * One business object that keeps failing: about 10 rows (whatever the row count) carry this entity number, in
 * their entity key and their body's entityId. The rare term of the text search: an order number from a ticket.
 */
// Distinct digits: a term such as 7777777 has a single trigram ('777'), which most rows contain somewhere.
export const RARE_TERM = '8406153'
/** The same rows name this customer deep in the body (after ~150 characters): a term only a full-body search finds. */
export const BODY_TERM = 'zurbriggen'
export const RARE_EVERY = 100_000
/** In error types and messages of several large groups (about a third of all rows). */
export const COMMON_TERM = 'timeout'
/** In one mid-sized group's error message (rank 15, about 1.2% of rows): too rare for a page of recent rows, too common to recheck cheaply. */
export const MID_TERM = 'device_fingerprint'

/**
 * The application header `tenant` (issue 16, "Search by any header"): TENANT_COMMON on about a third of the rows,
 * the rest spread over a long tail of tenant-0000 … tenant-1999 (the first ones large, the last ones ~100 rows), and
 * TENANT_RARE on the same ~10 rows as RARE_TERM.
 */
/**
 * A field of the JSON body only 1 in BODY_FIELD_EVERY messages has (issue 28, "Body fields"): `"escalation": {"level":
 * BODY_FIELD_VALUE, "ticket": "INC-<row>"}`, so `b./escalation/level=p1` matches 1 % of all rows and
 * `b./escalation/ticket=INC-<row>` one.
 */
export const BODY_FIELD_EVERY = 100
export const BODY_FIELD_POINTER = '/escalation/level'
export const BODY_FIELD_VALUE = 'p1'

export const TENANT_COMMON = 'acme'
export const TENANT_RARE = 'zephyr-labs'
export const TENANT_COMMON_SHARE = 0.35
export const TENANT_TAIL = 2000
