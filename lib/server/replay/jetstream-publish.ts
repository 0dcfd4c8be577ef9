import 'server-only'
import type { TypedTable, TypedValue } from '@/lib/server/platform/broker/typed-fields'
import { replayHeaders, type ReplayStamp, type StoredMessage } from './publish-message'

/**
 * Headers the NATS server reads as instructions or writes itself (docs/jetstream.md#replay). A replay never sends them
 * back: an old `Nats-Expected-Last-Sequence` would make the stream refuse the copy, a `Nats-Rollup` would purge the
 * subject's other messages, the original `Nats-Msg-Id` would have the copy dropped as a duplicate of the message that
 * failed, and the `Nats-Stream`/`Nats-Sequence`/`Nats-Subject` family describes where a message was read, not where it
 * goes. Lazarus' own `Nats-Msg-Id` is set per item by the publisher.
 */
const SERVER_HEADER_PREFIXES = ['nats-expected-', 'nats-batch-', 'nats-schedule'] as const
const SERVER_HEADERS: ReadonlySet<string> = new Set([
  'nats-msg-id',
  'nats-rollup',
  'nats-ttl',
  'nats-marker-reason',
  'nats-stream',
  'nats-sequence',
  'nats-time-stamp',
  'nats-subject',
  'nats-last-sequence',
  'nats-num-pending',
  'nats-pending-messages',
  'nats-pending-bytes',
  'nats-incr',
  'nats-required-api-level',
])

export function isNatsServerHeader(name: string): boolean {
  const lower = name.toLowerCase()
  return SERVER_HEADERS.has(lower) || SERVER_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix))
}

/**
 * Subjects a replay never publishes to (docs/jetstream.md#replay): the server's own APIs and events (`$JS.`, `$SYS.`,
 * and every other `$` subject, which covers the key-value and object stores, `$KV.` and `$O.`, and the advisories
 * Lazarus captures), and reply inboxes.
 */
export function reservedSubjectReason(subject: string): string | null {
  if (subject.startsWith('$')) return `"${subject}" is one of the NATS server's own subjects ($JS, $SYS, $KV, $O and the rest of $)`
  if (subject.startsWith('_INBOX.')) return `"${subject}" is a reply inbox`
  if (subject === '' || /[\s*>]/.test(subject) || subject.startsWith('.') || subject.endsWith('.') || subject.includes('..')) return `"${subject}" is not a subject a message can be published to`
  return null
}

/** SQL twin of reservedSubjectReason, on a subject expression (a NULL subject is not refused here: it has no origin). */
export function reservedSubjectSql(subjectSql: string): string {
  return `coalesce(left(${subjectSql}, 1) = '$' OR left(${subjectSql}, 7) = '_INBOX.' OR ${subjectSql} = '' OR ${subjectSql} ~ '[[:space:]*>]'
    OR left(${subjectSql}, 1) = '.' OR right(${subjectSql}, 1) = '.' OR strpos(${subjectSql}, '..') > 0, false)`
}

export type JetStreamPublishBuild =
  | { ok: true; data: Buffer; headers: [name: string, value: string][] }
  | { ok: false; message: string }

/** A typed header value as NATS header values: NATS carries strings only, a repeated name once per value. */
function headerValues(typed: TypedValue): string[] | null {
  if (!('v' in typed)) return null
  if (typed.t === 'A') {
    const out: string[] = []
    for (const item of typed.v) {
      const values = headerValues(item)
      if (values === null || values.length !== 1) return null
      out.push(values[0])
    }
    return out
  }
  const value = typed.v
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? [String(value)] : null
}

/**
 * The copy of a stored JetStream message a replay publishes: its data byte for byte and its headers, multi-valued ones
 * included, without the server's headers and with Lazarus' lineage headers stamped as on a RabbitMQ replay (so a copy
 * that fails again comes back linked to its job). Says why when the message cannot go out as it was stored.
 */
export function buildJetStreamPublish(message: StoredMessage & { headerBlockKept: boolean }, stamp: ReplayStamp, context: { maxBodyBytes: number; maxPayload: number | null }): JetStreamPublishBuild {
  if (message.body.length > context.maxBodyBytes) {
    return { ok: false, message: `too large: body of ${message.body.length} bytes exceeds the replay limit of ${context.maxBodyBytes}` }
  }
  if (context.maxPayload !== null && message.body.length > context.maxPayload) {
    return { ok: false, message: `too large: body of ${message.body.length} bytes exceeds the NATS server's max_payload of ${context.maxPayload}` }
  }
  // Stored only as its block (docs/jetstream.md#what-is-stored): not a header set a client can write back.
  if (message.headerBlockKept && Object.keys(message.headers).length === 0) {
    return { ok: false, message: 'cannot replay: the stored NATS header block could not be read as headers (it is kept, byte for byte, on the message)' }
  }
  const table: TypedTable = replayHeaders(message, stamp)
  const headers: [string, string][] = []
  for (const name of Object.keys(table)) {
    if (isNatsServerHeader(name)) continue
    const values = headerValues(table[name])
    if (values === null || /[\r\n:\s]/.test(name) || name === '' || values.some((v) => /[\r\n]/.test(v))) {
      return { ok: false, message: `cannot replay: header "${name.slice(0, 100)}" cannot be written as a NATS header` }
    }
    for (const value of values) headers.push([name, value])
  }
  return { ok: true, data: message.body, headers }
}
