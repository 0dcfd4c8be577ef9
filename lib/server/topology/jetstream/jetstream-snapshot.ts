import 'server-only'
import { JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream'
import { z } from 'zod'
import { subjectsOverlap } from '@/lib/shared/nats-subjects'
import { MAX_DELIVERIES_ADVISORY, TERMINATED_ADVISORY } from '@/lib/server/platform/broker/nats-advisory-subjects'

/*
 * The account's streams and their consumers as the NATS server describes them ($JS.API.STREAM.LIST, CONSUMER.LIST:
 * the answers of STREAM.INFO and CONSUMER.INFO, a page at a time), read-only. Plain data, so tests can write answers by
 * hand; every answer is checked with zod, as the management API's are (broker-snapshot.ts): a server with other field
 * shapes fails here, loudly, instead of in a rule. Durations are in milliseconds, unlimited limits as the server says
 * them (-1, or 0 for max_age).
 */

export type SnapshotConsumer = {
  name: string
  description: string | null
  ackPolicy: 'none' | 'all' | 'explicit'
  ackWaitMs: number
  /** -1 (or 0): unlimited. */
  maxDeliver: number
  backoffMs: number[]
  /** `sample_freq` (`100%`, `50`): the share of acks the server reports on $JS.EVENT.METRIC.CONSUMER.ACK. */
  sampleFreq: string | null
  filterSubjects: string[]
  numPending: number
  numAckPending: number
  numRedelivered: number
  numWaiting: number
}

export type SnapshotStream = {
  name: string
  description: string | null
  subjects: string[]
  retention: 'limits' | 'interest' | 'workqueue'
  discard: 'old' | 'new'
  discardNewPerSubject: boolean
  /** 0: unlimited. */
  maxAgeMs: number
  /** -1: unlimited (max_msgs, max_bytes, max_msgs_per_subject). */
  maxMsgs: number
  maxBytes: number
  maxMsgsPerSubject: number
  storage: 'file' | 'memory'
  messages: number
  bytes: number
  /** When the oldest message it holds was stored; null when it is empty. */
  firstMessageAt: string | null
  consumers: SnapshotConsumer[]
}

export type JetStreamSnapshot = {
  serverVersion: string
  /** When the server was read: the rules measure ages against it. */
  readAt: string
  streams: SnapshotStream[]
}

const NS_PER_MS = 1e6
const count = z.number().int().catch(0)

const streamAnswer = z.object({
  config: z.object({
    name: z.string().min(1),
    description: z.string().nullish(),
    subjects: z.array(z.string()).nullish(),
    retention: z.enum(['limits', 'interest', 'workqueue']),
    discard: z.enum(['old', 'new']).catch('old'),
    discard_new_per_subject: z.boolean().nullish(),
    max_age: z.number().catch(0),
    max_msgs: z.number().catch(-1),
    max_bytes: z.number().catch(-1),
    max_msgs_per_subject: z.number().catch(-1),
    storage: z.enum(['file', 'memory']).catch('file'),
  }),
  state: z.object({ messages: count, bytes: count, first_ts: z.string().nullish() }),
})

const consumerAnswer = z.object({
  name: z.string().min(1),
  config: z.object({
    description: z.string().nullish(),
    ack_policy: z.enum(['none', 'all', 'explicit']),
    ack_wait: z.number().nullish(),
    max_deliver: z.number().nullish(),
    backoff: z.array(z.number()).nullish(),
    sample_freq: z.string().nullish(),
    filter_subject: z.string().nullish(),
    filter_subjects: z.array(z.string()).nullish(),
  }),
  num_pending: count,
  num_ack_pending: count,
  num_redelivered: count,
  num_waiting: count,
})

/** The server's default ack wait: 30 s when a consumer sets none. */
const DEFAULT_ACK_WAIT_MS = 30_000
/** Streams whose consumers are listed at once: one request each, so a large account costs a few rounds, not one per stream. */
const CONSUMER_LISTS_AT_ONCE = 8
/** nats-server's error code for a stream that does not exist. */
const STREAM_NOT_FOUND = 10059

/** Whether a stream keeps failure advisories of any consumer: one of its subjects overlaps theirs. */
export function keepsAdvisories(stream: Pick<SnapshotStream, 'subjects'>): boolean {
  return stream.subjects.some((s) => subjectsOverlap(s, `${MAX_DELIVERIES_ADVISORY}.>`) || subjectsOverlap(s, `${TERMINATED_ADVISORY}.>`))
}

/**
 * The server's own streams (key-value buckets on `$KV.…`, object stores on `$O.…`): every subject is a `$` subject and
 * none carries failure advisories. Their consumers are the client libraries' watchers, not applications'.
 */
function isSystemStream(stream: Pick<SnapshotStream, 'subjects'>): boolean {
  return stream.subjects.length > 0 && stream.subjects.every((s) => s.startsWith('$')) && !keepsAdvisories(stream)
}

function toStream(answer: unknown): Omit<SnapshotStream, 'consumers'> {
  const { config, state } = streamAnswer.parse(answer)
  const first = state.messages > 0 && state.first_ts ? new Date(state.first_ts) : null
  return {
    name: config.name,
    description: config.description || null,
    subjects: config.subjects ?? [],
    retention: config.retention,
    discard: config.discard,
    discardNewPerSubject: config.discard_new_per_subject ?? false,
    maxAgeMs: config.max_age / NS_PER_MS,
    maxMsgs: config.max_msgs,
    maxBytes: config.max_bytes,
    maxMsgsPerSubject: config.max_msgs_per_subject,
    storage: config.storage,
    messages: state.messages,
    bytes: state.bytes,
    firstMessageAt: first && !Number.isNaN(first.getTime()) ? first.toISOString() : null,
  }
}

function toConsumer(answer: unknown): SnapshotConsumer {
  const { name, config, ...state } = consumerAnswer.parse(answer)
  return {
    name,
    description: config.description || null,
    ackPolicy: config.ack_policy,
    ackWaitMs: config.ack_wait ? config.ack_wait / NS_PER_MS : DEFAULT_ACK_WAIT_MS,
    maxDeliver: config.max_deliver ?? -1,
    backoffMs: (config.backoff ?? []).map((ns) => ns / NS_PER_MS),
    sampleFreq: config.sample_freq || null,
    filterSubjects: config.filter_subjects?.length ? config.filter_subjects : config.filter_subject ? [config.filter_subject] : [],
    numPending: state.num_pending,
    numAckPending: state.num_ack_pending,
    numRedelivered: state.num_redelivered,
    numWaiting: state.num_waiting,
  }
}

/**
 * Reads every stream of the account with its consumers, leaving out the server's own (key-value buckets, object
 * stores). Streams that keep failure advisories are read even though their subjects are `$JS.…`: they are the capture.
 */
export async function readJetStreamSnapshot({ jsm, serverVersion, now = new Date() }: { jsm: JetStreamManager; serverVersion: string; now?: Date }): Promise<JetStreamSnapshot> {
  const streams: Omit<SnapshotStream, 'consumers'>[] = []
  for await (const info of jsm.streams.list()) {
    const stream = toStream(info)
    if (!isSystemStream(stream)) streams.push(stream)
  }
  streams.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const withConsumers: SnapshotStream[] = []
  for (let i = 0; i < streams.length; i += CONSUMER_LISTS_AT_ONCE) {
    const chunk = streams.slice(i, i + CONSUMER_LISTS_AT_ONCE)
    const lists = await Promise.all(
      chunk.map(async (stream) => {
        const consumers: SnapshotConsumer[] = []
        try {
          for await (const info of jsm.consumers.list(stream.name)) consumers.push(toConsumer(info))
        } catch (error) {
          // Deleted since the list: it is not part of the account any more.
          if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return null
          throw error
        }
        return consumers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      }),
    )
    chunk.forEach((stream, j) => {
      const consumers = lists[j]
      if (consumers) withConsumers.push({ ...stream, consumers })
    })
  }
  return { serverVersion, readAt: now.toISOString(), streams: withConsumers }
}
