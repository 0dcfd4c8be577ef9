/**
 * The pause protocol shared by Lazarus and the guards inside applications (docs/ARCHITECTURE.md#pause-hold-release).
 * Plain constants and types: no Next.js, no server code, no runtime dependency.
 */

/**
 * Topic exchange Lazarus publishes pause and resume events on (routing keys `pause` and `resume`). A guard reads
 * nothing from an event: any client allowed to publish there could have written it, so it only makes the guard
 * re-read the pause list from Lazarus.
 */
export const CONTROL_EXCHANGE = 'lazarus.control'
/** Fanout exchange guards park held messages in; bound to the durable queue of the same name, drained by Lazarus. */
export const HOLD_EXCHANGE = 'lazarus.hold'
export const HOLD_QUEUE = 'lazarus.hold'

/** Set by the guard on a held message: the queue it was taken from (where the release sends it back). */
export const HELD_FROM_HEADER = 'x-lazarus-held-from'
/** Set by the guard on a held message: the entity key the pause matched (absent for a whole-queue pause). */
export const HELD_ENTITY_HEADER = 'x-lazarus-held-entity'
/** Set by the guard on a held message: a fresh id per hold, so two identical messages are stored as two. */
export const HELD_ID_HEADER = 'x-lazarus-held-id'
/** Every header the guard adds starts with this; a release strips them all. */
export const HELD_HEADER_PREFIX = 'x-lazarus-held-'
/** Marks a message Lazarus republishes for a paused entity (replayed dead letters and released holds): guards let it through. */
export const RELEASE_HEADER = 'x-lazarus-release'
/** Every replayed message carries it; guards let it through too (an operator asked for it explicitly). */
export const REPLAY_ID_HEADER = 'x-lazarus-replay-id'
/** The entity header Lazarus reads when a source has no entity-key rule. */
export const DEFAULT_ENTITY_HEADER = 'x-entity-key'

/** The AMQP properties an entity-key rule may read. */
export const ENTITY_KEY_PROPERTIES = ['correlationId', 'messageId', 'type', 'appId', 'userId', 'replyTo'] as const

/**
 * How a message's entity key is found (the source's rule, copied into each pause). The one definition: Lazarus'
 * API schema (lib/shared/schemas/source.ts) takes it from here, since the guard may import nothing of Lazarus.
 */
export type EntityKeyRule =
  | { kind: 'property'; name: (typeof ENTITY_KEY_PROPERTIES)[number] }
  | { kind: 'header'; name: string }
  | { kind: 'jsonPointer'; pointer: string }

/** How a version is read: a number, or an ISO 8601 time compared as epoch milliseconds. */
export const ENTITY_VERSION_TYPES = ['number', 'time'] as const

/**
 * Where a message's entity version lives (a source's rule, docs/ARCHITECTURE.md#entity-versions): the same places as
 * an entity key, plus how the value reads. Versions compare numerically; a value that does not read as its type is no
 * version (Lazarus flags it `entity-version-unparsable`).
 */
export type EntityVersionRule = EntityKeyRule & { type: (typeof ENTITY_VERSION_TYPES)[number] }

/**
 * POST /api/guard/superseded: a guard dropped a replayed or released message because it had already let a higher
 * version of the entity through. `replayId` is the message's x-lazarus-replay-id, which replayed and released
 * messages both carry: it names the job's item.
 */
export type SupersededReport = {
  queue: string
  vhost: string
  instance: string
  replayId: string
  entityKey: string
  version: number
  supersededBy: number
}

/** A pause as guards need it: a subset of GET /api/pauses items. */
export type GuardPause = {
  id: string
  vhost: string
  queue: string
  /** null: the whole queue is paused. */
  entityKey: string | null
  entityKeyRule: EntityKeyRule | null
  status: 'active' | 'releasing' | 'resumed'
  version: number
}

/** GET /api/pauses → { version, pauses }. */
export type PauseList = { version: number; pauses: GuardPause[] }

/**
 * Query parameters of a guard's poll, GET /api/pauses?…; the poll is also the guard's heartbeat. `registryVersion`
 * (guard 2.1) is the version of the list the guard read last, absent before its first: Lazarus counts the guards
 * that hold every change of their queue's pauses (docs/ARCHITECTURE.md#pause-hold-release, "Who listens").
 */
export type PausePollQuery = { queue: string; vhost: string; instance: string; guardVersion: string; registryVersion?: string }

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function parseRule(value: unknown): EntityKeyRule | null {
  if (!isRecord(value)) return null
  if (value.kind === 'property' && typeof value.name === 'string' && (ENTITY_KEY_PROPERTIES as readonly string[]).includes(value.name)) {
    return { kind: 'property', name: value.name as Extract<EntityKeyRule, { kind: 'property' }>['name'] }
  }
  if (value.kind === 'header' && typeof value.name === 'string' && value.name !== '') return { kind: 'header', name: value.name }
  if (value.kind === 'jsonPointer' && typeof value.pointer === 'string') return { kind: 'jsonPointer', pointer: value.pointer }
  return null
}

const isVersion = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0

/** Validates one pause from the API; null when it is not one. */
export function parseGuardPause(value: unknown): GuardPause | null {
  if (!isRecord(value)) return null
  const { id, vhost, queue, entityKey, status, version } = value
  if (typeof id !== 'string' || typeof vhost !== 'string' || typeof queue !== 'string') return null
  if (entityKey !== null && typeof entityKey !== 'string') return null
  if (status !== 'active' && status !== 'releasing' && status !== 'resumed') return null
  if (!isVersion(version)) return null
  return { id, vhost, queue, entityKey, entityKeyRule: parseRule(value.entityKeyRule), status, version }
}

/** Validates a GET /api/pauses body; null when it is not one. */
export function parsePauseList(value: unknown): PauseList | null {
  if (!isRecord(value) || !isVersion(value.version) || !Array.isArray(value.pauses)) return null
  const pauses: GuardPause[] = []
  for (const item of value.pauses) {
    const pause = parseGuardPause(item)
    if (!pause) return null
    pauses.push(pause)
  }
  return { version: value.version, pauses }
}
