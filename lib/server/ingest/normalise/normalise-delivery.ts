import 'server-only'
import type { DeliveryView, DerivedFailure, Framework, XDeathEntry } from '../types'
import { isInFuture } from './dates'
import { readBody } from './delivery-body'
import { detectFramework } from './detect-framework'
import { extractEntityKey, extractEntityVersion, isValidEntityKeyRule, isValidEntityVersionRule, MAX_ENTITY_KEY_LENGTH, type EntityKeySource } from './entity-key'
import { computeErrorSignature, fingerprint, NO_ERROR_METADATA } from './error-signature'
import { classifyFailure } from './failure-kind'
import { extractEasyNetQ } from './frameworks/easynetq'
import type { ErrorFacts, FrameworkContext, FrameworkFacts } from './frameworks/facts'
import { extractMassTransit } from './frameworks/masstransit'
import { extractNServiceBus } from './frameworks/nservicebus'
import { extractBrighter, extractCelery, extractNothing } from './frameworks/others'
import { extractRebus } from './frameworks/rebus'
import { extractSpring } from './frameworks/spring'
import { extractSymfony } from './frameworks/symfony'
import { extractWolverine } from './frameworks/wolverine'
import { asInteger, asNonBlankText, asRecord, asText, getField } from './header-values'
import type { FrameOptions, StackLanguage } from './stack-frames'
import { analyseStack, isWrapperType } from './stack-trace'
import { parseXDeath, type XDeathSummary } from './x-death'

/** Raw message and stack are kept for display, capped per failure (docs/framework-headers.md#limits). */
export const MAX_ERROR_TEXT = 64 * 1024
/** Type names, service names and versions longer than this are not names. */
const MAX_NAME = 1024

export type NormaliseOptions = FrameOptions & {
  /** The ingestion clock, for spotting timestamps from the future. */
  now?: Date
}

export type ProvenanceField =
  | 'errorType'
  | 'errorMessage'
  | 'errorStack'
  | 'failureKind'
  | 'service'
  | 'serviceVersion'
  | 'attempts'
  | 'failedAt'
  | 'origin.exchange'
  | 'origin.routingKeys'
  | 'origin.queue'
  | 'entityKey'

/**
 * Where each derived value came from (docs/framework-headers.md#where-each-value-came-from), so the UI can show how
 * far to trust it.
 */
export type Provenance = Partial<Record<ProvenanceField, string>>

/**
 * DerivedFailure plus two optional extras the contract has no field for: the message type (a facet and
 * part of the "no error metadata" grouping) and per-field provenance. Assignable to DerivedFailure.
 */
export type NormalisedDelivery = DerivedFailure & { messageType: string | null; provenance: Provenance }

const EXTRACTORS: Record<Framework, (ctx: FrameworkContext) => FrameworkFacts> = {
  lazarus: extractNothing,
  nservicebus: extractNServiceBus,
  masstransit: extractMassTransit,
  'spring-amqp': (ctx) => extractSpring(ctx, 'spring-amqp'),
  'spring-cloud-stream': (ctx) => extractSpring(ctx, 'spring-cloud-stream'),
  rebus: extractRebus,
  wolverine: extractWolverine,
  easynetq: extractEasyNetQ,
  symfony: extractSymfony,
  celery: extractCelery,
  brighter: extractBrighter,
  'plain-dlx': extractNothing,
  unknown: extractNothing,
}

/** The language a framework's services are written in, for x-error-stack text that does not make it obvious. */
const FRAMEWORK_LANGUAGE: Partial<Record<Framework, StackLanguage>> = {
  nservicebus: 'dotnet',
  masstransit: 'dotnet',
  rebus: 'dotnet',
  wolverine: 'dotnet',
  easynetq: 'dotnet',
  brighter: 'dotnet',
  'spring-amqp': 'java',
  'spring-cloud-stream': 'java',
  symfony: 'php',
  celery: 'python',
}

/** PostgreSQL text cannot hold NUL; a forged header must not fail the drainer's insert. */
function clean(text: string): string {
  return text.includes('\u0000') ? text.replace(/\u0000/g, '\uFFFD') : text
}

function cleanOrNull(text: string | null | undefined): string | null {
  return text === null || text === undefined ? null : clean(text)
}

function capped(text: string | null, max: number, flag: string, flags: Set<string>): string | null {
  if (text === null || text.length <= max) return text
  flags.add(flag)
  return text.slice(0, max)
}

function headerText(headers: Record<string, unknown>, name: string): string | null {
  return asNonBlankText(getField(headers, name))
}

/** Broker-side counters; a value that is present but not a sane count is flagged and ignored. */
function headerCount(headers: Record<string, unknown>, name: string, flags: Set<string>): number | null {
  const raw = getField(headers, name)
  if (raw === undefined || raw === null) return null
  const n = asInteger(raw)
  if (n === null || n < 0) {
    flags.add(`header-malformed:${name}`)
    return null
  }
  return n
}

/** The error a framework's facts or the generic headers give, before it is hashed into a signature. */
type ErrorRecord = Omit<ErrorFacts, 'sources'>

/** Lazarus' own headers win over whatever the framework reported (docs/framework-headers.md#lazarus-own-headers). */
function mergeError(
  framework: Framework,
  facts: FrameworkFacts,
  headers: Record<string, unknown>,
  provenance: Provenance,
): ErrorRecord {
  const e = facts.error
  const record: ErrorRecord = {
    type: e?.type ?? null,
    message: e?.message ?? null,
    stack: e?.stack ?? null,
    frames: e?.frames ?? [],
    rootMissing: e?.rootMissing ?? false,
    extraParts: e?.extraParts ?? [],
  }
  if (e?.type) provenance.errorType = e.sources.type ?? 'framework'
  if (e?.message) provenance.errorMessage = e.sources.message ?? 'framework'
  if (e?.stack) provenance.errorStack = e.sources.stack ?? 'framework'

  const ownType = headerText(headers, 'x-error-type')?.trim() ?? null
  const ownMessage = headerText(headers, 'x-error-message')
  const ownStack = headerText(headers, 'x-error-stack')
  if (ownStack !== null) {
    const analysis = analyseStack(ownStack, {
      hint: FRAMEWORK_LANGUAGE[framework],
      knownMessage: ownMessage ?? record.message,
    })
    record.stack = ownStack
    record.frames = analysis.frames
    record.rootMissing = analysis.rootMissing
    record.extraParts = []
    provenance.errorStack = 'x-error-stack'
    if (analysis.root) {
      record.type = analysis.root.type
      record.message = analysis.root.message ?? record.message
      provenance.errorType = 'x-error-stack'
      if (analysis.root.message) provenance.errorMessage = 'x-error-stack'
    }
  }
  if (ownType) {
    record.type = ownType
    record.rootMissing = isWrapperType(ownType) && record.rootMissing
    provenance.errorType = 'x-error-type'
  }
  if (ownMessage !== null) {
    record.message = ownMessage
    provenance.errorMessage = 'x-error-message'
  }
  // Degraded parts only stand in for an unknown type (docs/framework-headers.md#degraded-inputs, Spring without a
  // trace).
  if (record.type !== null) record.extraParts = []
  return record
}

/**
 * The x-death reason that says why the message failed. Symfony's AMQP retries park messages in TTL queues
 * named `delay_*`; their expiry is the retry mechanism, not a failure (docs/framework-headers.md#symfony-messenger).
 */
function failureDeathReason(framework: Framework, xDeath: XDeathSummary): string | null {
  const latest = xDeath.entries[0]
  if (framework === 'symfony' && xDeath.decisiveReason === 'expired' && latest?.queue?.startsWith('delay_')) return null
  return xDeath.decisiveReason
}

function derive(delivery: DeliveryView, options: NormaliseOptions, now: Date): NormalisedDelivery {
  const headers = asRecord(getField(delivery, 'headers')) ?? {}
  const properties = asRecord(getField(delivery, 'properties')) ?? {}
  const queue = asText(getField(delivery, 'queue')) ?? ''
  const exchange = asText(getField(delivery, 'exchange')) ?? ''
  const routingKey = asText(getField(delivery, 'routingKey')) ?? ''
  const body = readBody(getField(delivery, 'body'), getField(properties, 'contentEncoding'), getField(delivery, 'bodyJson'))
  const flags = new Set<string>()
  const provenance: Provenance = {}

  const xDeath = parseXDeath(headers, now)
  xDeath.flags.forEach((f) => flags.add(f))

  const detection = { queue, routingKey, headers, properties, body }
  const framework = detectFramework(detection)
  const facts = EXTRACTORS[framework]({ delivery: { queue, exchange, routingKey }, headers, properties, body, now })
  facts.flags.forEach((f) => flags.add(f))

  const error = mergeError(framework, facts, headers, provenance)
  // Capped before classification and hashing, so a forged megabyte "type" cannot slow the rules down.
  error.type = capped(cleanOrNull(error.type), MAX_NAME, 'error-type-truncated', flags)
  error.message = capped(cleanOrNull(error.message), MAX_ERROR_TEXT, 'error-text-truncated', flags)
  error.stack = capped(cleanOrNull(error.stack), MAX_ERROR_TEXT, 'error-text-truncated', flags)

  const explicitKind = asText(getField(headers, 'x-failure-kind'))
  const kind = classifyFailure({
    explicit: explicitKind === null || explicitKind.trim() === '' ? null : explicitKind,
    errorTypes: [error.type],
    messages: [error.message],
    deathReason: failureDeathReason(framework, xDeath),
    hasError: error.type !== null || error.message !== null || error.stack !== null,
  })
  kind.flags.forEach((f) => flags.add(f))
  provenance.failureKind = kind.source

  // x-death describes the broker's view and wins; framework conventions fill what it leaves out.
  const origin = {
    exchange: xDeath.origin.exchange ?? facts.origin.exchange?.value ?? null,
    routingKeys: xDeath.origin.routingKeys.length > 0 ? xDeath.origin.routingKeys : (facts.origin.routingKeys?.value ?? []),
    queue: xDeath.origin.queue ?? facts.origin.queue?.value ?? null,
  }
  const fromXDeath = 'x-death / x-first-death-*'
  if (origin.exchange !== null) {
    provenance['origin.exchange'] = xDeath.origin.exchange !== null ? fromXDeath : facts.origin.exchange?.source
  }
  if (origin.queue !== null) {
    provenance['origin.queue'] = xDeath.origin.queue !== null ? fromXDeath : facts.origin.queue?.source
  }
  if (origin.routingKeys.length > 0) {
    provenance['origin.routingKeys'] = xDeath.origin.routingKeys.length > 0 ? fromXDeath : facts.origin.routingKeys?.source
  }

  // Broker counters first (docs/rabbitmq.md#x-death); a delivery_limit death counts once, x-delivery-count every try.
  const deliveryCount = headerCount(headers, 'x-delivery-count', flags)
  const acquiredCount = headerCount(headers, 'x-acquired-count', flags)
  const brokerCounts = [xDeath.rejections, deliveryCount].filter((n): n is number => n !== null)
  let attempts: number | null = null
  if (brokerCounts.length > 0) {
    attempts = Math.max(...brokerCounts)
    provenance.attempts = attempts === xDeath.rejections ? 'x-death count (rejected + delivery_limit)' : 'x-delivery-count'
  } else if (acquiredCount !== null) {
    attempts = acquiredCount
    provenance.attempts = 'x-acquired-count'
  } else if (facts.attempts) {
    attempts = facts.attempts.value
    provenance.attempts = facts.attempts.source
  }

  let frameworkFailedAt = facts.failedAt
  if (frameworkFailedAt && isInFuture(frameworkFailedAt.value, now)) {
    flags.add('failed-at-suspicious')
    frameworkFailedAt = null
  }
  const failedAt = frameworkFailedAt?.value ?? xDeath.lastDeathAt ?? null
  if (failedAt) provenance.failedAt = frameworkFailedAt?.source ?? 'x-death time (latest)'

  const ownService = headerText(headers, 'x-service')
  const appId = asNonBlankText(getField(properties, 'appId'))
  const service = ownService ?? facts.service?.value ?? appId
  if (service !== null) provenance.service = ownService !== null ? 'x-service' : (facts.service?.source ?? 'appId')
  const ownVersion = headerText(headers, 'x-service-version')
  const serviceVersion = ownVersion ?? facts.serviceVersion?.value ?? null
  if (serviceVersion !== null) {
    provenance.serviceVersion = ownVersion !== null ? 'x-service-version' : facts.serviceVersion?.source
  }

  let entityKey: string | null
  const rule = getField(delivery, 'entityKeyRule')
  const source: EntityKeySource = { properties, headers, json: () => body.json(), ...facts.entitySource }
  if (rule !== undefined && rule !== null) {
    const validRule = isValidEntityKeyRule(rule) ? rule : null
    if (!validRule) flags.add('entity-key-rule-invalid')
    entityKey = validRule ? extractEntityKey(validRule, source) : null
    if (entityKey !== null && validRule) provenance.entityKey = `rule:${validRule.kind}`
  } else {
    const own = headerText(headers, 'x-entity-key')?.trim() ?? null
    entityKey = own !== null && own.length <= MAX_ENTITY_KEY_LENGTH ? own : null
    if (entityKey !== null) provenance.entityKey = 'x-entity-key'
  }

  // A version without an entity is of nothing: only read when there is a key (docs/ARCHITECTURE.md#entity-versions).
  let entityVersion: number | null = null
  const versionRule = getField(delivery, 'entityVersionRule')
  if (versionRule !== undefined && versionRule !== null && entityKey !== null) {
    if (!isValidEntityVersionRule(versionRule)) flags.add('entity-version-rule-invalid')
    else {
      const version = extractEntityVersion(versionRule, source)
      if (version === 'unparsable') flags.add('entity-version-unparsable')
      else entityVersion = version
    }
  }

  const signature = computeErrorSignature({
    errorType: error.type,
    errorMessage: error.message,
    frames: error.frames,
    rootMissing: error.rootMissing,
    extraParts: error.extraParts,
    fallback: {
      queue: xDeath.firstDeathQueue ?? origin.queue ?? (queue || null),
      reason: xDeath.firstDeathReason ?? facts.reason,
      messageType: facts.messageType,
    },
    frameOptions: options,
  })

  const originIdRaw = getField(headers, 'x-lazarus-origin-id')
  const originId = capped(cleanOrNull(asNonBlankText(originIdRaw)), MAX_NAME, 'lineage-malformed', flags)
  if (originIdRaw !== undefined && originIdRaw !== null && originId === null) flags.add('lineage-malformed')
  const replayCount = headerCount(headers, 'x-lazarus-replay-count', flags) ?? 0
  // Links a replayed copy that died again to the replay_items row (and so the earlier copy) it came from.
  const replayId = capped(cleanOrNull(asNonBlankText(getField(headers, 'x-lazarus-replay-id'))), 128, 'lineage-malformed', flags)
  const names = {
    service: capped(cleanOrNull(service), MAX_NAME, 'service-truncated', flags),
    serviceVersion: capped(cleanOrNull(serviceVersion), MAX_NAME, 'service-truncated', flags),
    messageType: capped(cleanOrNull(facts.messageType), MAX_NAME, 'message-type-truncated', flags),
  }

  const xDeathEntries: XDeathEntry[] = xDeath.entries.map((e) => ({
    ...e,
    queue: cleanOrNull(e.queue),
    reason: cleanOrNull(e.reason),
    exchange: cleanOrNull(e.exchange),
    routingKeys: e.routingKeys.map(clean),
    originalExpiration: cleanOrNull(e.originalExpiration),
  }))

  return {
    framework,
    errorType: error.type,
    errorMessage: error.message,
    errorStack: error.stack,
    failureKind: kind.kind,
    service: names.service,
    serviceVersion: names.serviceVersion,
    entityKey: cleanOrNull(entityKey),
    deathReason: cleanOrNull(xDeath.deathReason),
    attempts,
    origin: {
      exchange: cleanOrNull(origin.exchange),
      routingKeys: origin.routingKeys.map(clean),
      queue: cleanOrNull(origin.queue),
    },
    xDeath: xDeathEntries,
    firstDeathAt: xDeath.firstDeathAt,
    lastDeathAt: xDeath.lastDeathAt,
    failedAt,
    signature: signature.signature,
    title: clean(signature.title),
    messagePattern: cleanOrNull(signature.messagePattern),
    topFrames: signature.frames.map(clean),
    flags: [...flags].map(clean).sort(),
    lineage: { originId, replayCount, ...(replayId === null ? {} : { replayId }) },
    ...(entityVersion !== null && { entityVersion }),
    messageType: names.messageType,
    provenance,
  }
}

/** Last resort: a bug here must cost one message its details, never the drainer its batch. */
function unreadable(): NormalisedDelivery {
  return {
    framework: 'unknown',
    errorType: null,
    errorMessage: null,
    errorStack: null,
    failureKind: 'unknown',
    service: null,
    serviceVersion: null,
    entityKey: null,
    deathReason: null,
    attempts: null,
    origin: { exchange: null, routingKeys: [], queue: null },
    xDeath: [],
    firstDeathAt: null,
    lastDeathAt: null,
    failedAt: null,
    signature: fingerprint([`<${NO_ERROR_METADATA}>`, '<normalise failed>']),
    title: `${NO_ERROR_METADATA}: delivery could not be read`,
    messagePattern: null,
    flags: ['normalise-failed'],
    lineage: { originId: null, replayCount: 0 },
    messageType: null,
    provenance: {},
  }
}

/**
 * Derives everything Lazarus stores about a failure from one DLQ delivery (docs/ARCHITECTURE.md#normalising,
 * docs/framework-headers.md). Pure: no I/O, and it never throws, whatever the headers or body hold.
 */
export function normaliseDelivery(delivery: DeliveryView, options: NormaliseOptions = {}): NormalisedDelivery {
  const now = options.now instanceof Date && !Number.isNaN(options.now.getTime()) ? options.now : new Date()
  try {
    return derive(delivery, options, now)
  } catch {
    return unreadable()
  }
}
