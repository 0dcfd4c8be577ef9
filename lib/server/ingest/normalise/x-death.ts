import 'server-only'
import type { XDeathEntry } from '../types'
import { isInFuture } from './dates'
import { asDate, asInteger, asRecord, asText, asTextArray, getField } from './header-values'

export const KNOWN_DEATH_REASONS = ['rejected', 'expired', 'maxlen', 'delivery_limit'] as const

/** One entry per {queue, reason} pair: more than this is not something a broker produces. */
const MAX_ENTRIES = 64
const MAX_ROUTING_KEYS = 100
/** A TTL retry loop of one second runs for years before it reaches this. */
const MAX_SANE_COUNT = 100_000_000
/** Queue, exchange and routing-key names are AMQP short strings (255 bytes); longer values are forged. */
const MAX_NAME = 255 * 4

export type XDeathSummary = {
  entries: XDeathEntry[]
  /** Reason of the most recent dead-lettering (element 0), else the x-last/x-first-death header. */
  deathReason: string | null
  /**
   * The reason that best explains why the message ended up here. In a retry topology the most recent
   * entry is the `expired` hop out of a delay queue; the `rejected` entry is the real failure.
   */
  decisiveReason: string | null
  /** Sum of `count` over rejected and delivery_limit entries; null when there are none. */
  rejections: number | null
  origin: { exchange: string | null; routingKeys: string[]; queue: string | null }
  firstDeathQueue: string | null
  firstDeathReason: string | null
  firstDeathAt: Date | null
  lastDeathAt: Date | null
  flags: string[]
}

function isTimestampShaped(value: unknown): boolean {
  if (value instanceof Date || typeof value === 'number' || typeof value === 'bigint') return true
  return getField(value, '!') !== undefined
}

type EntryResult = { entry: XDeathEntry; malformed: boolean; suspicious: boolean }

function parseEntry(raw: unknown, now: Date): EntryResult | null {
  const table = asRecord(raw)
  if (!table) return null
  let malformed = false
  let suspicious = false

  const text = (name: string): string | null => {
    const value = getField(table, name)
    if (value === undefined || value === null) return null
    const t = asText(value)
    if (t === null) malformed = true
    if (t !== null && t.length > MAX_NAME) suspicious = true
    return t === null ? null : t.slice(0, MAX_NAME)
  }

  const queue = text('queue')
  const reason = text('reason')
  if (queue === null || reason === null) malformed = true
  if (reason !== null && !(KNOWN_DEATH_REASONS as readonly string[]).includes(reason)) suspicious = true

  let count: number | null = null
  const rawCount = getField(table, 'count')
  if (rawCount !== undefined && rawCount !== null) {
    count = asInteger(rawCount)
    if (count === null) malformed = true
    else if (count < 1 || count > MAX_SANE_COUNT) {
      suspicious = true
      count = null
    }
  }

  let time: Date | null = null
  const rawTime = getField(table, 'time')
  if (rawTime !== undefined && rawTime !== null) {
    time = asDate(rawTime)
    // A timestamp-typed value that fails is out of range (forged); anything else is the wrong type.
    if (time === null && isTimestampShaped(rawTime)) suspicious = true
    else if (time === null) malformed = true
    else if (isInFuture(time, now)) {
      suspicious = true
      time = null
    }
  }

  const keys = asTextArray(getField(table, 'routing-keys'), MAX_ROUTING_KEYS)
  if (keys.malformed) malformed = true
  if (keys.values.some((k) => k.length > MAX_NAME)) suspicious = true

  return {
    entry: {
      queue,
      reason,
      count,
      exchange: text('exchange'),
      routingKeys: keys.values.map((k) => k.slice(0, MAX_NAME)),
      time,
      originalExpiration: text('original-expiration'),
    },
    malformed,
    suspicious,
  }
}

function headerText(headers: unknown, name: string): string | null {
  return asText(getField(headers, name))?.slice(0, MAX_NAME) ?? null
}

const isFailureReason = (reason: string | null) => reason === 'rejected' || reason === 'delivery_limit'

/** Reads `x-death` and `x-first/last-death-*` (docs/rabbitmq.md#x-death). Never throws; oddities become flags. */
export function parseXDeath(headers: unknown, now: Date): XDeathSummary {
  const flags = new Set<string>()
  const raw = getField(headers, 'x-death')
  let list: unknown[] = []
  if (Array.isArray(raw)) list = raw
  else if (raw !== undefined && raw !== null) {
    flags.add('x-death-malformed')
    // A lone table is still readable; anything else is not.
    if (asRecord(raw)) list = [raw]
  }
  if (list.length > MAX_ENTRIES) {
    flags.add('x-death-suspicious')
    list = list.slice(0, MAX_ENTRIES)
  }

  const entries: XDeathEntry[] = []
  for (const item of list) {
    const parsed = parseEntry(item, now)
    if (!parsed) {
      flags.add('x-death-malformed')
      continue
    }
    if (parsed.malformed) flags.add('x-death-malformed')
    if (parsed.suspicious) flags.add('x-death-suspicious')
    entries.push(parsed.entry)
  }

  const firstQueueHeader = headerText(headers, 'x-first-death-queue')
  const firstReasonHeader = headerText(headers, 'x-first-death-reason')
  const firstExchangeHeader = headerText(headers, 'x-first-death-exchange')

  if (entries.length > 0 && firstQueueHeader === null) flags.add('x-death-suspicious')
  if (firstQueueHeader !== null && entries.length > 0 && !entries.some((e) => e.queue === firstQueueHeader)) {
    flags.add('x-death-suspicious')
  }

  // Without x-first-death-* the oldest entry is the best guess at the origin.
  const oldest = entries.at(-1) ?? null
  const firstDeathQueue = firstQueueHeader ?? oldest?.queue ?? null
  const firstDeathReason = firstReasonHeader ?? oldest?.reason ?? null
  const originEntry =
    entries.find((e) => e.queue === firstDeathQueue && e.reason === firstDeathReason) ??
    entries.find((e) => e.queue === firstDeathQueue) ??
    null

  const deathReason =
    entries[0]?.reason ?? headerText(headers, 'x-last-death-reason') ?? firstReasonHeader ?? null
  const hasFailure = entries.some((e) => isFailureReason(e.reason))
  const decisiveReason =
    deathReason === 'expired' && hasFailure
      ? (entries.find((e) => isFailureReason(e.reason))?.reason ?? deathReason)
      : deathReason

  let rejections: number | null = null
  for (const e of entries) {
    if (isFailureReason(e.reason) && e.count !== null) rejections = Math.min((rejections ?? 0) + e.count, MAX_SANE_COUNT)
  }

  const times = entries.flatMap((e) => (e.time ? [e.time.getTime()] : []))
  return {
    entries,
    deathReason,
    decisiveReason,
    rejections,
    origin: {
      exchange: firstExchangeHeader ?? originEntry?.exchange ?? null,
      routingKeys: originEntry?.routingKeys ?? [],
      queue: firstDeathQueue,
    },
    firstDeathQueue,
    firstDeathReason,
    firstDeathAt: times.length ? new Date(Math.min(...times)) : null,
    lastDeathAt: times.length ? new Date(Math.max(...times)) : null,
    flags: [...flags],
  }
}
